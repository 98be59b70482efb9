"""The language server object: shared state and the helpers every feature module uses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer

from jax_lsp import __version__
from jax_lsp.core.findings import Span
from jax_lsp.server import notebooks, positions
from jax_lsp.server.checker import Checker
from jax_lsp.server.client_support import ClientSupport
from jax_lsp.server.diagnostics import DiagnosticStore
from jax_lsp.server.documents import (
    LspTextDocument,
    analysis_key,
    file_lines,
    is_python,
    uri_to_path,
)
from jax_lsp.server.logs import log
from jax_lsp.server.places import Place
from jax_lsp.server.protocol import SYNC_KIND, JaxLanguageServerProtocol
from jax_lsp.server.registry import Features, LanguageFeature
from jax_lsp.server.settings import ServerSettings

if TYPE_CHECKING:
    from cattrs import Converter

    from jax_lsp.engine import Workspace

T = TypeVar("T")


# How long a request waits for the workspace to be built (the client's configuration reply).
ANALYSIS_WAIT_S = 10.0
# The analysis bugs logged, each once, are remembered up to this many: one whose site moves as
# lines are typed above it is a new one at each line.
LOGGED_ERRORS_KEPT = 1000


class JaxLanguageServer(LanguageServer):
    protocol: JaxLanguageServerProtocol

    def __init__(self) -> None:
        super().__init__(
            "jax-lsp",
            __version__,
            text_document_sync_kind=SYNC_KIND,
            notebook_document_sync=notebooks.SYNC,
            protocol_cls=JaxLanguageServerProtocol,
        )
        self.settings = ServerSettings()
        self.settings_problems: list[str] = []  # those the user was last told of
        self.init_options: dict[str, Any] = {}
        self.analysis: Workspace | None = None  # built once the settings are known
        self.roots: list[Path] = []
        self.client_support = ClientSupport()  # read at initialize
        self.shutdown_requested = False  # the exit code is 0 only after a `shutdown` request
        self.shutting_down = False
        self._settings_ready: asyncio.Event | None = None
        # Checks of buffers run on this one thread, in order. The index (below) and the jedi
        # refinement (the checker's own thread) use the same workspace from theirs: its one lock
        # lets one of them in at a time (jedi's own inference runs outside it).
        self._analysis_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jax-lsp-analysis")
        # The index runs beside it, taking the workspace's lock one file at a time, so checks of
        # open buffers go on between its files.
        self.index_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jax-lsp-index")
        self.index_task: asyncio.Task[None] | None = None
        self.parent_watch: asyncio.Task[None] | None = None
        self.features = Features()
        self.diagnostics = DiagnosticStore(self)
        self.checker = Checker(self)
        self._logged_internal_errors: set[str] = set()

    @property
    def converter(self) -> Converter:
        """The converter pygls (de)serialises messages with: LSP types, attrs classes <-> JSON."""
        return self.protocol.converter

    @property
    def pull_diagnostics(self) -> bool:
        """Whether the client pulls diagnostics (and can be told to pull again)."""
        return self.client_support.pull_diagnostics

    # -- the analysis -----------------------------------------------------------------------
    async def run_analysis(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the analysis' thread; log the analysis bugs it met, each once."""
        result = await asyncio.get_running_loop().run_in_executor(self._analysis_thread, fn, *args)
        if self.analysis is not None:
            for error in map(str, self.analysis.take_internal_errors()):
                if error not in self._logged_internal_errors:
                    if len(self._logged_internal_errors) >= LOGGED_ERRORS_KEPT:
                        self._logged_internal_errors.clear()
                    self._logged_internal_errors.add(error)
                    log.error("%s (the rest of the file was checked; please report this)", error)
        return result

    @property
    def settings_ready(self) -> asyncio.Event:
        if self._settings_ready is None:
            self._settings_ready = asyncio.Event()
        return self._settings_ready

    # -- documents --------------------------------------------------------------------------
    def document(self, uri: str) -> LspTextDocument | None:
        """The open Python buffer at ``uri``, or None."""
        # pygls keys its buffers by the unquoted URI (a cell's `#W0sZmlsZQ%3D%3D`, a `%20`).
        doc = self.workspace.text_documents.get(unquote(uri))
        return doc if doc is not None and is_python(doc.uri, doc.language_id) else None

    def open_documents(self) -> list[LspTextDocument]:
        return [d for d in list(self.workspace.text_documents.values()) if is_python(d.uri, d.language_id)]

    def lines_of(self, uri: str) -> Sequence[str]:
        """The lines of the open buffer, else of the file on disk (for edits in other files)."""
        doc = self.document(uri)
        return doc.lines if doc is not None else file_lines(uri_to_path(uri))

    def to_lsp_range(self, uri: str, span: Span) -> types.Range:
        return positions.to_lsp_range(self.lines_of(uri), span, self.workspace.position_codec)

    # -- a request's place ------------------------------------------------------------------
    def place(self, uri: str, position: types.Position | None = None) -> Place | None:
        """Where a request on ``uri`` points, resolved once for every feature that answers it;
        None for a URI the analysis has no key for."""
        key = analysis_key(uri)
        if key is None:
            return None
        codec = self.workspace.position_codec
        place = Place(uri, key, self.document(uri), notebooks.joined(self, uri), codec)
        return replace(place, position=place.to_core(position)) if position is not None else place

    async def current_place(self, uri: str, position: types.Position) -> Place | None:
        """The place of a request that reads the analysis, resolved once the analysis holds the
        open buffer's current text (waiting for its check, and for the analysis to be built)."""
        if self.document(uri) is not None and await self.built_analysis() is not None:
            await self.checker.findings(uri)
        return self.place(uri, position)

    async def built_analysis(self) -> Workspace | None:
        """The workspace, once it is built. A request that comes before the client has answered
        workspace/configuration (a hover or completion right after didOpen) waits for it, at
        most ANALYSIS_WAIT_S, rather than answering nothing; None if it is still not built."""
        if self.analysis is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.settings_ready.wait(), ANALYSIS_WAIT_S)
        return self.analysis

    def location(self, path: str, span: Span) -> types.Location:
        """An analysis (path, span) as an LSP location: a file, a buffer, or a notebook cell."""
        uri, span = notebooks.place(self, path, span)
        return types.Location(uri=uri, range=self.to_lsp_range(uri, span))

    # -- for the features -------------------------------------------------------------------
    def add_feature(self, feature: LanguageFeature) -> None:
        self.features.add(feature)

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
        self.checker.stop_waiting()
        self._analysis_thread.shutdown(wait=False, cancel_futures=True)
        self.index_thread.shutdown(wait=False, cancel_futures=True)
        self.features.shutdown()
