"""A second process for half of the candidates: forked from the advise child once the example's
forward trace is shared, so that a machine's second CPU traces candidates too.

Forking is safe only before anything starts threads: a JAX backend (its threads would be
missing in the fork, which then hangs) or the user's code. So the worker is forked before the
advise child asks JAX for its device, and each process then starts its own backend. Where the
child already runs threads, or has one CPU, no worker is forked and the child does all the work.
"""

from __future__ import annotations

import json
import os
import signal
import time

from ..preload import fork_safe


def _cpus():
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def can_fork():
    """Whether forking this process now is safe (`fork_safe`) and worth it (two CPUs)."""
    return _cpus() >= 2 and fork_safe()


class Worker:
    """A forked process running ``work()``; `result` is what it returned, read back as JSON."""

    def __init__(self, pid, fd):
        self.pid = pid
        self.fd = fd

    @classmethod
    def start(cls, work):
        """Fork a worker running ``work()`` (its value JSON-able), or None where `can_fork` says no."""
        if not can_fork():
            return None
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # never returns: it must not answer the agent, whose pipe it inherited
            try:
                os.close(read_fd)
                started = time.process_time()
                value = work()
                answer = {"value": value, "cpu_s": time.process_time() - started}
                data = json.dumps(answer, default=str).encode("utf-8")
                while data:
                    data = data[os.write(write_fd, data) :]
            finally:
                os._exit(0)
        os.close(write_fd)
        return cls(pid, read_fd)

    def result(self):
        """``{"value": what work() returned, "cpu_s": its CPU time}``, or None where it failed."""
        chunks = []
        while chunk := os.read(self.fd, 1 << 16):
            chunks.append(chunk)
        self.close()
        try:
            answer = json.loads(b"".join(chunks)) if chunks else None
        except ValueError:
            return None
        return answer if isinstance(answer, dict) and "value" in answer else None

    def close(self):
        """Stop the worker (if it still runs) and reap it."""
        if self.fd is None:
            return
        os.close(self.fd)
        self.fd = None
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
