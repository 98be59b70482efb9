"""Work done beside the caller by a forked process, for a command that would otherwise leave a
core idle on a short run: a pool of processes (batch) costs more to import and start than such
a run takes. The child inherits everything imported, does one piece of work and exits; what it
returns comes back through a pipe, marshalled (plain data: str, bytes, lists, dicts).

Only on Linux, where fork is cheap and safe in a process without threads (the command line's).
Anywhere else, and whenever the child fails, the work is done in the caller instead: the result
is the same, only later.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Callable
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class InChild(Generic[R]):
    """`work()`, started in a forked process when made; `result()` waits for what it returns.
    Used as a context manager: a child whose result was not asked for is stopped on exit."""

    def __init__(self, work: Callable[[], R], fork: bool = True) -> None:
        """`fork` False: no process, the work is done by `result()` (for little work)."""
        self._work = work
        self._child: tuple[int, int] | None = None  # (process id, the pipe's end to read)
        if fork and sys.platform == "linux":
            self._child = self._start()

    def _start(self) -> tuple[int, int] | None:
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return None
        if pid == 0:  # the child: it never returns from here, nor runs the parent's exit
            code = 1
            try:
                os.close(read_end)
                with open(write_end, "wb") as pipe:
                    value: Any = self._work()  # plain data, as the class says
                    pipe.write(marshal.dumps(value))
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        return pid, read_end

    def __enter__(self) -> InChild[R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._child is not None:
            import signal  # here: a child is stopped only when its caller failed

            pid, read_end = self._child
            self._child = None
            os.close(read_end)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)

    def result(self) -> R:
        if self._child is None:
            return self._work()
        pid, read_end = self._child
        self._child = None
        with open(read_end, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return self._work()
        value: R = marshal.loads(data)
        return value
