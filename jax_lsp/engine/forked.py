"""Work done beside the caller by a forked process, for a command that would otherwise leave a
core idle: a pool of processes costs more to import and start than a short run takes, and each
of its processes makes again what the caller made for the whole project. The child inherits
everything imported and made, makes the items of one piece of work and exits; each item comes
back through a pipe as soon as it is made, marshalled (plain data: str, bytes, lists, tuples,
dicts), so the caller can work on the first while the child makes the next. The caller and its
children share numbered pieces of work by taking turns (`Turns`).

Only on Linux, where fork is cheap, and only in a process of one thread (the command line's):
a thread holding a lock at the fork (JAX's, in a process that imported it) would leave it held
in the child. Anywhere else the items are made by the caller as it asks for them; and if the
child fails, the caller makes those it did not send (the work must give the same items each
time).
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Callable, Iterable, Iterator

# typing costs a check ~4 ms to import: the type checker sees InChild as Generic[T].
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Generic, TypeVar

    T = TypeVar("T")

    class _Typed(Generic[T]):
        pass

else:
    T = None

    class _Typed:
        def __class_getitem__(cls, _item: object) -> type:
            return cls


_HEADER_BYTES = 8  # each item is sent as its length, then its marshalled bytes
_TURN_BYTES = 4  # each number `Turns` hands out
# The numbers are all written before any process reads them, and a pipe holds 64 KiB on Linux.
MAX_TURNS = 65536 // _TURN_BYTES


def _can_fork() -> bool:
    try:
        return sys.platform == "linux" and len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class InChild(_Typed[T]):
    """The items of `work()`, made by a forked process started when this is made. Used as a
    context manager: a child whose items were not all taken is stopped on exit."""

    def __init__(self, work: Callable[[], Iterable[T]], fork: bool = True) -> None:
        """`fork` False: no process; the items are made as `items()` is iterated."""
        self._work = work
        self._child: tuple[int, int] | None = None  # (process id, the pipe's end to read)
        self._running: int | None = None  # a child whose items are being taken
        if fork and _can_fork():
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
                    for item in self._work():
                        value: Any = item  # plain data, as the module says
                        data = marshal.dumps(value)
                        pipe.write(len(data).to_bytes(_HEADER_BYTES, "little") + data)
                        pipe.flush()
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        return pid, read_end

    def items(self) -> Iterator[T]:
        if self._child is None:
            yield from self._work()
            return
        pid, read_end = self._child
        self._child, self._running = None, pid
        received = 0
        with open(read_end, "rb") as pipe:
            while len(header := pipe.read(_HEADER_BYTES)) == _HEADER_BYTES:
                size = int.from_bytes(header, "little")
                data = pipe.read(size)
                if len(data) < size:
                    break
                received += 1
                yield marshal.loads(data)
        self._running = None
        _, status = os.waitpid(pid, 0)
        if status != 0:  # the child failed: the items it did not send are made here
            for index, item in enumerate(self._work()):
                if index >= received:
                    yield item

    def __enter__(self) -> InChild[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._child is not None:
            os.close(self._child[1])
            self._stop(self._child[0])
        elif self._running is not None:
            self._stop(self._running)

    def _stop(self, pid: int) -> None:
        import signal  # here: a child is stopped only when its caller failed or stopped early

        self._child = self._running = None
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


class Turns:
    """The numbers 0..count-1, each taken once, in order, by whichever process asks first: this
    one, and the processes it forks while it takes them (`InChild`), share the work they number.
    They wait in a pipe, written whole before any fork; a read of so few bytes from a pipe is
    never split between readers."""

    def __init__(self, count: int) -> None:
        if count > MAX_TURNS:
            raise ValueError(f"{count} turns: at most {MAX_TURNS}")
        self._read_end, write_end = os.pipe()
        with open(write_end, "wb") as pipe:
            pipe.write(b"".join(n.to_bytes(_TURN_BYTES, "little") for n in range(count)))

    def __iter__(self) -> Iterator[int]:
        while len(data := os.read(self._read_end, _TURN_BYTES)) == _TURN_BYTES:
            yield int.from_bytes(data, "little")

    def __enter__(self) -> Turns:
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self._read_end)
