"""pygls' LanguageServerProtocol, extended through its `protocol_cls` seam (as in
jedi-language-server): documents split into lines as LSP clients count them, the converter
it was built with, and a way for a request to hear that the client cancelled it."""

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
        super().handle_message(message)

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
