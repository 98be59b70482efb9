"""pygls' LanguageServerProtocol, extended through its `protocol_cls` seam (as in
jedi-language-server): documents split into lines as LSP clients count them, the converter
it was built with, a way for a request to hear that the client cancelled it, and no record
kept of a handler that has finished."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol

from jax_lsp.server.documents import LspWorkspace

if TYPE_CHECKING:
    from cattrs import Converter

SYNC_KIND = types.TextDocumentSyncKind.Incremental


class JaxLanguageServerProtocol(LanguageServerProtocol):
    def __init__(self, server: Any, converter: Converter) -> None:
        super().__init__(server, converter)
        # The lsprotocol converter: LSP types (and attrs classes, in camelCase) <-> JSON.
        self.converter = converter
        self._documents: LspWorkspace | None = None
        self._cancel_watchers: dict[int | str, asyncio.Future[None]] = {}

    @property
    def workspace(self) -> LspWorkspace:
        """pygls' workspace, rebuilt on first use (it is empty until the first didOpen) as one
        whose documents split lines at `\\n`, `\\r\\n` and `\\r` only."""
        built = super().workspace  # raises before `initialize`, as pygls' does
        if self._documents is None:
            self._documents = LspWorkspace(
                built.root_uri,
                SYNC_KIND,
                list(built.folders.values()),
                built.position_encoding,
            )
        return self._documents

    def handle_message(self, message: Any) -> None:
        if getattr(message, "method", None) == types.CANCEL_REQUEST:
            watcher = self._cancel_watchers.get(message.params.id)
            if watcher is not None and not watcher.done():
                watcher.cancel()
        running = getattr(self, "_request_futures", None)
        before = set(running) if isinstance(running, dict) else set()
        super().handle_message(message)
        if isinstance(running, dict):
            for key in running.keys() - before - {getattr(message, "id", None)}:
                _forget_when_done(running, key)

    @contextmanager
    def cancellation(self) -> Iterator[asyncio.Future[None]]:
        """A future cancelled when the client sends `$/cancelRequest` for the request being
        handled, while the block runs (pygls cancels only the request's own future, which for
        a command is not the task that runs it)."""
        watcher: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        msg_id = self.msg_id
        if msg_id is not None:
            self._cancel_watchers[msg_id] = watcher
        try:
            yield watcher
        finally:
            if msg_id is not None:
                self._cancel_watchers.pop(msg_id, None)


def _forget_when_done(running: dict[Any, Any], key: Any) -> None:
    """Drop pygls' record of a handler it runs under an id of its own once the handler is done.

    pygls 2.1 keeps the future of each notification's handler, and of each user handler that
    one of its built-in handlers (`didChange`, `executeCommand`...) hands a message to, under a
    fresh uuid that nothing ever removes: one future, with its lock and condition, per message,
    for the life of the server (half a kilobyte an edit). Only a request's own id, which the
    client may cancel and pygls removes once it has answered, is left to pygls. The record goes
    on the event loop, after the callback: pygls' `shutdown` cancels the futures while it
    iterates over them, and a future cancelled calls its callbacks at once."""
    future = running[key]
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # handled outside an event loop: pygls' own tests of the protocol
        return

    def forget() -> None:
        if running.get(key) is future:
            running.pop(key, None)

    def when_done(_: Any) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(forget)

    future.add_done_callback(when_done)
