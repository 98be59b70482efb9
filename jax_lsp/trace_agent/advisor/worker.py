"""A second process for half of the candidates: forked from the advise child once the example's
forward trace is shared, so that a machine's second CPU traces candidates too.

Forking is safe only before anything starts threads: a JAX backend (its threads would be
missing in the fork, which then hangs) or the user's code. So the worker is forked before the
advise child asks JAX for its device. The child then starts its backend and gives the worker
what the worker needs of it (`give`: the platform, the device and its memory kinds), so that
the worker starts none of its own unless its tracing asks for one. Where the child already
runs threads, or has one CPU, no worker is forked and the child does all the work.
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
    """A forked process running ``work(given)``, ``given`` what `give` sends it; `result` is what
    it returned, read back as JSON."""

    def __init__(self, pid, fd, give_fd):
        self.pid = pid
        self.fd = fd
        self.give_fd = give_fd

    @classmethod
    def start(cls, work):
        """Fork a worker running ``work(given)`` (its value JSON-able), or None where `can_fork`
        says no."""
        if not can_fork():
            return None
        read_fd, write_fd = os.pipe()
        given_fd, give_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # never returns: it must not answer the agent, whose pipe it inherited
            try:
                os.close(read_fd)
                os.close(give_fd)
                given = _read_json(given_fd)
                started = time.process_time()
                value = work(given)
                _write_json(write_fd, {"value": value, "cpu_s": time.process_time() - started})
            finally:
                os._exit(0)
        os.close(write_fd)
        os.close(given_fd)
        return cls(pid, read_fd, give_fd)

    def give(self, value):
        """Send the worker its ``given`` (JSON-able): it waits for it before it starts its work."""
        give_fd, self.give_fd = self.give_fd, None  # closed by the write, whatever happens
        _write_json(give_fd, value)

    def result(self):
        """``{"value": what work() returned, "cpu_s": its CPU time}``, or None where it failed."""
        answer = _read_json(self.fd)
        self.fd = None
        self.close()
        return answer if isinstance(answer, dict) and "value" in answer else None

    def close(self):
        """Stop the worker (if it still runs) and reap it."""
        if self.give_fd is not None:
            os.close(self.give_fd)
            self.give_fd = None
        if self.pid is None:
            return
        if self.fd is not None:
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
        self.pid = None


def _write_json(fd, value):
    """Write ``value`` as JSON to the pipe ``fd`` (what cannot be, as its ``str``); closes it."""
    data = json.dumps(value, default=str).encode("utf-8")
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _read_json(fd):
    """What the pipe ``fd`` held once its writer closed it, read as JSON (None where it is not);
    closes it."""
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        return json.loads(b"".join(chunks)) if chunks else None
    except ValueError:
        return None
