"""Loggers for the modules every `jax-lsp check` imports.

Importing `logging` costs about 8 ms at every start (traceback, threading, string...), and a
check that goes well logs nothing: `logger(name)` stands for `logging.getLogger(name)`, which
it imports when a message is first logged. Each call goes to the real logger of that name, so
handlers and levels set by the server or a test apply as they would.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging


class _Logger:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> object:
        import logging

        return getattr(logging.getLogger(self._name), attribute)


def logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)`, with `logging` imported at the first call of one of its methods."""
    return _Logger(name)  # type: ignore[return-value]  # a stand-in, not a Logger: see _Logger
