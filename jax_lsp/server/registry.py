"""The parts of the server that answer together: one hover, one shutdown, the buffer events.

pygls takes one handler per LSP method. Like esbonio's `add_feature`, the server registers that
one handler, resolves the request's `Place` once, and asks each `LanguageFeature` in turn, in
the order they were added; a feature's failure is logged and the others still answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from jax_lsp.server.logs import log
from jax_lsp.trace.mapping import LineEdit

if TYPE_CHECKING:
    from jax_lsp.core.findings import Finding, Position
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer
    from jax_lsp.server.settings import ServerSettings

T = TypeVar("T")
F = TypeVar("F", bound="LanguageFeature")
HOVER_SEPARATOR = "\n\n---\n\n"
REQUEST_FAILED = -32803  # LSP's RequestFailed
_PROGRESS_TOKENS = itertools.count(1)


class LanguageFeature:
    """A part of the server; override the hooks it takes part in."""

    def __init__(self, server: JaxLanguageServer) -> None:
        self.server = server

    # -- for features that run the user's code (trace, advise) -----------------------------
    def file_place(self, command: str, verb: str, arguments: tuple[Any, ...]) -> tuple[Path, Position]:
        """The file and the position (code points) that a command's `[uri, {line, character}]`
        arguments name; refused unless they name a place in a file on disk."""
        try:
            uri, position = arguments
            lsp = types.Position(line=int(position["line"]), character=int(position["character"]))
        except (TypeError, ValueError, KeyError):
            raise JsonRpcException(
                f"{command} takes [uri, {{line, character}}], got {list(arguments)!r}", -32602
            ) from None
        place = self.server.place(uri, lsp)
        if place is None or place.file is None or place.position is None or not place.file.is_file():
            raise JsonRpcException(f"Cannot {verb} {uri}: not a file", REQUEST_FAILED)
        return place.file, place.position

    def warn_unsaved(self, path: Path, what: str) -> None:
        """Tell the user that `what` ("the trace runs") reads the file on disk, not the buffer."""
        from jax_lsp.server.documents import path_to_uri

        doc = self.server.document(path_to_uri(path))
        try:
            on_disk = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return
        if doc is not None and doc.source != on_disk:
            self.server.notify_user(f"{path.name} has unsaved changes: {what} the file on disk")

    async def run_job(
        self,
        submit: Callable[[], Any],
        kind: str,
        message: str,
        cancelled: asyncio.Future | None,
        progress: bool,
    ) -> Any:
        """Submit an agent job (`submit()`, on a thread: it may start the agent) and wait for its
        answer, under `progress_of`'s $/progress: its cancel kills the job."""
        jobs: list[Any] = []
        stopped = []  # cancelled before the job was submitted

        def cancel() -> None:
            stopped.append(True)
            for job in jobs:
                job.cancel()

        async with self.progress_of(kind, message, cancelled, progress, cancel):
            jobs.append(await asyncio.to_thread(submit))
            if stopped:
                cancel()
            return await asyncio.wrap_future(jobs[0].future)

    @contextlib.asynccontextmanager
    async def progress_of(
        self,
        kind: str,
        message: str,
        cancelled: asyncio.Future | None,
        progress: bool,
        cancel: Callable[[], None],
    ) -> AsyncIterator[Callable[[str], None]]:
        """With `progress`, a cancellable $/progress titled "jax-lsp KIND" where the client shows
        them, for the block; it gives the block ``report(message)`` (callable from any thread).
        The request's cancel ($/cancelRequest cancels `cancelled`), the progress's cancel button
        and the block's own cancellation call ``cancel()``."""
        token = (
            await self._begin_progress(f"jax-lsp-{kind}-{next(_PROGRESS_TOKENS)}", kind, message)
            if progress
            else None
        )
        loop = asyncio.get_running_loop()

        def report(text: str) -> None:
            if token is not None:
                update = types.WorkDoneProgressReport(message=text)
                loop.call_soon_threadsafe(self.server.work_done_progress.report, token, update)

        def cancel_work(future: Any) -> None:
            if future.cancelled():
                cancel()

        for future in (cancelled, self.server.work_done_progress.tokens.get(token) if token else None):
            if future is not None:
                future.add_done_callback(cancel_work)
        try:
            yield report
        except asyncio.CancelledError:
            cancel()
            raise
        finally:
            if token is not None:
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
                self.server.work_done_progress.tokens.pop(token, None)  # pygls keeps every one

    async def _begin_progress(self, token: str, kind: str, message: str) -> str | None:
        """A cancellable $/progress under `token`, if the client shows them; None otherwise."""
        ls = self.server
        if not ls.client_support.work_done_progress:
            return None
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as exc:
            log.debug("The client refused a progress token: %s", exc)
            return None
        ls.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=f"jax-lsp {kind}", message=message, cancellable=True)
        )
        return token

    async def hover(self, place: Place) -> types.Hover | None:
        """Markdown for the position, once the analysis holds the buffer's current text; every
        feature's are shown, in order, as one hover."""
        return None

    async def code_lenses(self, place: Place) -> list[types.CodeLens]:
        """Code lenses of the buffer; every feature's are shown."""
        return []

    async def code_actions(self, place: Place, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Code actions beside the static fixes (asked after them); the place is the range's start."""
        return []

    def findings(self, place: Place) -> list[Finding]:
        """The findings the feature shows in the buffer now, with their fixes: fix-all applies
        their safe ones, as it does a rule's."""
        return []

    def did_change(self, place: Place, edits: Sequence[LineEdit]) -> None:
        """A Python buffer changed by ``edits``, in order (called before the next message is
        handled)."""

    async def did_save(self, place: Place) -> None:
        """A Python buffer was saved (run as a task of its own)."""

    def did_close(self, place: Place) -> None:
        """A Python buffer was closed (its document is gone)."""

    def analysis_built(self) -> None:
        """A new analysis workspace (`server.analysis`) was built: the settings or the roots changed."""

    async def settings_changed(self, previous: ServerSettings) -> None:
        """The settings changed from ``previous`` to `server.settings` (run as a task of its own)."""

    def shutdown(self) -> None:
        """The server stops: end what the feature started (may be called more than once)."""


class Features:
    """The server's features, asked in the order they were added."""

    def __init__(self) -> None:
        self._features: list[LanguageFeature] = []
        self._tasks: set[asyncio.Task[None]] = set()  # did_save runs, kept until they end

    def add(self, feature: LanguageFeature) -> None:
        self._features.append(feature)

    async def hover(self, place: Place) -> types.Hover | None:
        hovers = []
        for feature in self._features:
            try:
                hover = await feature.hover(place)
            except Exception:
                log.exception("Hover of %s failed", type(feature).__name__)
                continue
            if hover is not None:
                hovers.append(hover)
        return merged(hovers)

    def find(self, kind: type[F]) -> F | None:
        """The feature of class ``kind``, if added (features that share a service find each other)."""
        return next((f for f in self._features if isinstance(f, kind)), None)

    async def code_lenses(self, place: Place) -> list[types.CodeLens]:
        lenses: list[types.CodeLens] = []
        for feature in self._features:
            try:
                lenses += await feature.code_lenses(place)
            except Exception:
                log.exception("Code lenses of %s for %s failed", type(feature).__name__, place.uri)
        return lenses

    async def code_actions(self, place: Place, params: types.CodeActionParams) -> list[types.CodeAction]:
        actions: list[types.CodeAction] = []
        for feature in self._features:
            try:
                actions += await feature.code_actions(place, params)
            except Exception:
                log.exception("Code actions of %s failed", type(feature).__name__)
        return actions

    def findings(self, place: Place) -> list[Finding]:
        return [f for found in self._each("findings", lambda feature: feature.findings(place)) for f in found]

    def did_change(self, place: Place, changes: Sequence[types.TextDocumentContentChangeEvent]) -> None:
        edits = [line_edit(change) for change in changes]
        self._each("didChange", lambda feature: feature.did_change(place, edits))

    def did_save(self, place: Place) -> None:
        for saved in self._each("didSave", lambda feature: feature.did_save(place)):
            self._start(saved)

    def did_close(self, place: Place) -> None:
        self._each("didClose", lambda feature: feature.did_close(place))

    def analysis_built(self) -> None:
        self._each("analysis_built", lambda feature: feature.analysis_built())

    def settings_changed(self, previous: ServerSettings) -> None:
        for changed in self._each("settings_changed", lambda feature: feature.settings_changed(previous)):
            self._start(changed)

    def shutdown(self) -> None:
        self._each("shutdown", lambda feature: feature.shutdown())

    def _each(self, event: str, call: Callable[[LanguageFeature], T]) -> list[T]:
        results = []
        for feature in self._features:
            try:
                results.append(call(feature))
            except Exception:
                log.exception("%s of %s failed", event, type(feature).__name__)
        return results

    def _start(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("A didSave or settings hook failed", exc_info=task.exception())


def line_edit(change: types.TextDocumentContentChangeEvent) -> LineEdit:
    """What an LSP content change does to the buffer's line numbers."""
    if isinstance(change, types.TextDocumentContentChangePartial):
        start, end = change.range.start, change.range.end
        return LineEdit.of((start.line, start.character), (end.line, end.character), change.text)
    return LineEdit.whole_text()


def merged(hovers: list[types.Hover]) -> types.Hover | None:
    """One hover: the Markdown of each, in order, and the first range given."""
    if not hovers:
        return None
    text = HOVER_SEPARATOR.join(
        hover.contents.value if isinstance(hover.contents, types.MarkupContent) else str(hover.contents)
        for hover in hovers
    )
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        range=next((hover.range for hover in hovers if hover.range is not None), None),
    )


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: JaxLanguageServer, params: types.HoverParams) -> types.Hover | None:
        place = await ls.current_place(params.text_document.uri, params.position)
        return await ls.features.hover(place) if place is not None else None

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(ls: JaxLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        place = ls.place(params.text_document.uri)
        return await ls.features.code_lenses(place) if place is not None else []
