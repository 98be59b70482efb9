"""Logging to stderr and to the client's log (window/logMessage); stdout carries the protocol."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcException

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer

LOGGER = logging.getLogger("jax_lsp")
# The one logger of the server's modules.
log = logging.getLogger("jax_lsp.server")
_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
_MESSAGE_TYPES = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
    logging.DEBUG: types.MessageType.Log,
}


class ClientLogHandler(logging.Handler):
    """Sends records to the client from the event loop's thread, whatever thread logged them."""

    def __init__(self, server: JaxLanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._server = server
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._sending = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        # A record logged while one is sent (pygls logs a failed send: the client has gone and
        # stdout is closed) stays on stderr: sending it would fail and log again, without end.
        if getattr(self._sending, "record", None) is not None:
            return
        self._sending.record = record
        try:
            params = types.LogMessageParams(
                type=_MESSAGE_TYPES.get(record.levelno, types.MessageType.Error), message=self.format(record)
            )
            if threading.get_ident() == self._loop_thread:
                self._server.window_log_message(params)
            elif not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._send_from_loop, record, params)
        except Exception:
            self.handleError(record)
        finally:
            self._sending.record = None

    def _send_from_loop(self, record: logging.LogRecord, params: types.LogMessageParams) -> None:
        self._sending.record = record
        try:
            self._server.window_log_message(params)
        finally:
            self._sending.record = None


class _NoTracebackForRefusals(logging.Filter):
    """pygls logs every error response with a traceback. A request refused on purpose (a
    JsonRpcException: tracing in an untrusted workspace, bad command arguments) is no crash,
    and the server logs one line for it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], JsonRpcException))


def setup_stderr(level: str = "info") -> None:
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_NoTracebackForRefusals())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.WARNING)  # pygls' own chatter stays out
    set_level(level)


def attach_client(server: JaxLanguageServer) -> None:
    """Called once the event loop runs and the client is initialized."""
    handler = ClientLogHandler(server, asyncio.get_running_loop())
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    LOGGER.addHandler(handler)


def set_level(level: str) -> None:
    LOGGER.setLevel(_LEVELS.get(level, logging.INFO))
