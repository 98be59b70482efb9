"""Keeping one bad site from costing a file: deep trees get a deep stack, and any other
exception becomes an `InternalError` that names where it happened."""

from __future__ import annotations

import _thread
import sys
from collections.abc import Callable

from jax_lsp.core.findings import InternalError
from jax_lsp.core.logger import logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

log = logger(__name__)

# `ast.parse` builds trees up to about three times the recursion limit deep (an `elif` chain of
# 2,900 branches at the default limit); walking one takes a few Python frames per level.
DEEP_RECURSION_LIMIT = 200_000
DEEP_STACK_BYTES = 512 * 1024 * 1024
# `_thread`, not `threading`: its locks and ids are the same, and it costs no import (threading,
# ~1.5 ms, is imported only to start a deep-stack worker).
_deep_lock = _thread.allocate_lock()
# A deep-stack worker's thread id -> the id of the thread waiting for it.
_waiting_for: dict[int, int] = {}


def _principal(ident: int) -> int:
    """The thread a deep-stack worker works for; any other thread works for itself."""
    while ident in _waiting_for:
        ident = _waiting_for[ident]
    return ident


class WorkLock:
    """A re-entrant lock that the deep-stack worker of its holder enters too.

    `deep()` runs a function again on another thread while the caller waits for it; when the
    function needs a lock the caller holds (the workspace's, to load an imported module), a
    plain RLock would have both threads wait for ever."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._owner: int | None = None  # the principal thread of the holder
        self._depth = 0

    def __enter__(self) -> None:
        principal = _principal(_thread.get_ident())
        if self._owner != principal:  # only the holder's own threads can read their id here
            self._lock.acquire()
            self._owner = principal
        self._depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()


def deep(function: Callable[[], T]) -> T:
    """`function()`, run again on a thread with a large stack and recursion limit when the
    tree it walks is too deep for the current one.

    The recursion limit is process-wide: the caller must hold the lock under which the
    workspace parses, so that no `ast.parse` runs meanwhile and accepts deeper trees. The
    worker enters the locks its caller holds, if they are WorkLocks."""
    try:
        return function()
    except RecursionError:
        if _thread.get_ident() in _waiting_for:  # already on a deep stack: too deep even there
            raise
        log.debug("recursion limit reached; running again on a deep stack")
    import threading

    values: list[T] = []
    errors: list[BaseException] = []
    caller = _thread.get_ident()

    def run() -> None:
        _waiting_for[_thread.get_ident()] = caller
        try:
            values.append(function())
        except BaseException as exc:  # noqa: BLE001 - handed back to the calling thread
            errors.append(exc)
        finally:
            del _waiting_for[_thread.get_ident()]

    with _deep_lock:
        limit = sys.getrecursionlimit()
        previous_size = threading.stack_size(DEEP_STACK_BYTES)
        try:
            sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
            worker = threading.Thread(target=run, name="jax-lsp-deep")
            worker.start()
            worker.join()
        finally:
            threading.stack_size(previous_size)
            sys.setrecursionlimit(limit)
    if errors:
        raise errors[0]
    return values[0]


def guarded(
    function: Callable[[], T],
    default: T,
    errors: list[InternalError],
    path: str,
    line: int,
    stage: str,
) -> T:
    """`deep(function)`, or `default` with an InternalError appended when it raises."""
    try:
        return deep(function)
    except Exception as exc:  # noqa: BLE001 - an analysis bug must cost one site, not the file
        error = InternalError(path, line, stage, f"{type(exc).__name__}: {exc}")
        log.debug("%s", error, exc_info=exc)  # the traceback is formatted only if shown
        errors.append(error)
        return default
