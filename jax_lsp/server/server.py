"""The language server object: shared state and the helpers every feature module uses."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer

from jax_lsp import __version__
from jax_lsp.core.model import Position, Span
from jax_lsp.server import notebooks, positions
from jax_lsp.server.documents import (
    LspTextDocument,
    LspWorkspace,
    core_path,
    is_python,
    split_lines,
    uri_to_path,
)
from jax_lsp.server.settings import ServerSettings

log = logging.getLogger("jax_lsp.server")
T = TypeVar("T")


class JaxLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "jax-lsp",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebooks.SYNC,
        )
        self.settings = ServerSettings()
        self.init_options: dict[str, Any] = {}
        self.core: Any = None  # jax_lsp.engine.Workspace, built once the settings are known
        self.roots: list[Path] = []
        self.pull_diagnostics = False
        self.shutting_down = False
        self._settings_ready: asyncio.Event | None = None
        # Checks of buffers run on this one thread, in order. The index (below) and the jedi
        # refinement (the checker's own thread) use the same workspace from theirs: its one lock
        # lets one of them in at a time (jedi's own inference runs outside it).
        self._core_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jax-lsp-core")
        # The index runs beside it, taking the workspace's lock one file at a time, so checks of
        # open buffers go on between its files.
        self.index_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jax-lsp-index")
        self._save_listeners: list[Callable[[str], Any]] = []
        self._close_listeners: list[Callable[[str], Any]] = []
        self._change_listeners: list[Callable[[types.DidChangeTextDocumentParams], Any]] = []
        self._settings_listeners: list[Callable[[ServerSettings], Any]] = []
        self._logged_internal_errors: set[str] = set()

    # -- the core ---------------------------------------------------------------------------
    async def run_core(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the core's thread; log the analysis bugs it met, each once."""
        result = await asyncio.get_running_loop().run_in_executor(self._core_thread, fn, *args)
        if self.core is not None:
            for error in map(str, self.core.take_internal_errors()):
                if error not in self._logged_internal_errors:
                    self._logged_internal_errors.add(error)
                    log.error("%s (the rest of the file was checked; please report this)", error)
        return result

    @property
    def settings_ready(self) -> asyncio.Event:
        if self._settings_ready is None:
            self._settings_ready = asyncio.Event()
        return self._settings_ready

    # -- documents --------------------------------------------------------------------------
    def install_workspace(self) -> None:
        """Swap pygls' document store for one that splits lines as LSP clients do."""
        old = self.protocol.workspace
        self.protocol._workspace = LspWorkspace(
            old.root_uri, old._sync_kind, list(old.folders.values()), old.position_encoding
        )

    def document(self, uri: str) -> LspTextDocument | None:
        """The open Python buffer at ``uri``, or None."""
        # pygls keys its buffers by the unquoted URI (a cell's `#W0sZmlsZQ%3D%3D`, a `%20`).
        doc = self.workspace.text_documents.get(unquote(uri))
        return doc if doc is not None and is_python(doc.uri, doc.language_id) else None  # type: ignore[return-value]

    def open_documents(self) -> list[LspTextDocument]:
        return [d for d in list(self.workspace.text_documents.values()) if is_python(d.uri, d.language_id)]  # type: ignore[misc]

    def lines_of(self, uri: str) -> list[str] | tuple[str, ...]:
        """The lines of the open buffer, else of the file on disk (for edits in other files)."""
        doc = self.document(uri)
        if doc is not None:
            return doc.lines
        path = uri_to_path(uri)
        try:
            return split_lines(path.read_text(encoding="utf-8")) if path else []
        except (OSError, UnicodeDecodeError):
            return []

    def to_lsp_range(self, uri: str, span: Span) -> types.Range:
        return positions.to_lsp_range(self.lines_of(uri), span, self.workspace.position_codec)

    def to_core_position(self, uri: str, position: types.Position) -> Position:
        return positions.to_core_position(self.lines_of(uri), position, self.workspace.position_codec)

    async def core_place(self, uri: str, position: types.Position) -> tuple[str, Position] | None:
        """The core's path and position for a position in an open buffer (a synced notebook
        cell is a part of its notebook's joined text), once the core has the buffer's current
        text; None for any other buffer."""
        path = core_path(uri)
        if self.document(uri) is None or path is None or self.core is None:
            return None
        await self.checker.findings(uri)
        core_position = self.to_core_position(uri, position)
        notebook = notebooks.joined(self, uri)
        if notebook is not None:
            return notebook.path, Position(core_position.line + notebook.line_of(uri), core_position.column)
        return str(path), core_position

    def location(self, path: str, span: Span) -> types.Location:
        """A core (path, span) as an LSP location: a file, a buffer, or a notebook cell."""
        uri, span = notebooks.place(self, path, span)
        return types.Location(uri=uri, range=self.to_lsp_range(uri, span))

    # -- hooks for other features (the trace) -----------------------------------------------
    def on_save(self, callback: Callable[[str], Any]) -> None:
        self._save_listeners.append(callback)

    def on_close(self, callback: Callable[[str], Any]) -> None:
        self._close_listeners.append(callback)

    def on_change(self, callback: Callable[[types.DidChangeTextDocumentParams], Any]) -> None:
        self._change_listeners.append(callback)

    def on_settings_changed(self, callback: Callable[[ServerSettings], Any]) -> None:
        self._settings_listeners.append(callback)

    def notify_listeners(self, listeners: str, argument: Any) -> None:
        for callback in getattr(self, f"_{listeners}_listeners"):
            try:
                result = callback(argument)
                if asyncio.iscoroutine(result):
                    asyncio.ensure_future(result)
            except Exception:
                log.exception("A %s listener failed", listeners)

    def publish_diagnostics(self, source: str, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        """Replace the diagnostics of ``source`` for ``uri``; the client sees every source's."""
        self.diagnostics.set(source, uri, diagnostics)

    # -- messages ---------------------------------------------------------------------------
    def notify_user(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """A window/showMessage, as far as the `showNotifications` setting allows; always logged."""
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.WARNING, "%s", message)
        level = self.settings.show_notifications
        if level == "always" or (level == "onError" and kind <= types.MessageType.Warning):
            self.window_show_message(types.ShowMessageParams(type=kind, message=f"jax-lsp: {message}"))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would pop every internal error in the editor; log it and keep serving.
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            log.info("Request refused: %s", error)  # on purpose, e.g. a trace in an untrusted workspace
            return
        log.error("Internal error (%s): %s", getattr(source, "__name__", source), error)

    def stop_background_work(self) -> None:
        self.shutting_down = True
        self._core_thread.shutdown(wait=False, cancel_futures=True)
        self.index_thread.shutdown(wait=False, cancel_futures=True)
