"""The debounced checker of open buffers: each change checked on the analysis' thread, its findings
published only if the buffer still has the text they were computed from.

jedi is never on the keystroke path: a check publishes what the static analysis knows, and the
callees it left to jedi are asked about on the jedi thread once the buffer is quiet; the file
is then checked again and published only if its findings changed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jax_lsp.core.findings import Finding
from jax_lsp.server import notebooks
from jax_lsp.server.diagnostics import SOURCE, shown, to_diagnostic
from jax_lsp.server.documents import analysis_key, path_to_uri
from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from jax_lsp.engine import Workspace
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer

# A change that arrives while the one before it is still unchecked (typing, a paste sent as
# several messages) waits this long for more; an isolated change is checked at once.
DEBOUNCE_S = 0.01
# jedi starts once a buffer has been quiet this long: it holds the GIL that the checks of the
# next keystrokes need.
JEDI_IDLE_S = 0.2


@dataclass(frozen=True)
class CheckRequest:
    """What a scheduled check was asked to do; a newer one takes over a pending one's asks."""

    external: bool
    propagate: bool
    refined: bool


class Checker:
    """Debounced, latest-wins analysis of open buffers."""

    def __init__(self, server: JaxLanguageServer) -> None:
        self._server = server
        self._tasks: dict[str, asyncio.Task] = {}
        self._requests: dict[str, CheckRequest] = {}  # what each task in _tasks was asked
        # (version, findings) of the newest result per uri, for code actions and pulls.
        self.results: dict[str, tuple[int | None, list[Finding]]] = {}
        self._waiters: dict[str, list[tuple[int | None, asyncio.Future]]] = {}
        # analysis path -> (analysis, text) last given to that analysis by set_document
        self._sent: dict[str, tuple[Workspace, str]] = {}
        self._refinements: dict[str, asyncio.Task] = {}
        self._jedi_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jax-lsp-jedi")
        # Set while no check is pending (since _quiet_since): background work waits for it.
        self._quiet = threading.Event()
        self._quiet.set()
        self._quiet_since = time.monotonic()

    def schedule(
        self,
        uri: str,
        debounce: bool = False,
        external: bool = False,
        refined: bool = False,
        place: Place | None = None,
    ) -> None:
        """(Re)check ``uri``; a newer request replaces a pending one (latest wins).

        ``debounce``: an edit, which waits DEBOUNCE_S if the previous one is still unchecked.
        ``external``: the change came from elsewhere (another file, the index, the settings),
        so a pull client must be told to pull again. Only a change of ``uri`` itself makes
        the files it affects be checked again (they would otherwise bounce checks back).
        ``refined``: jedi named more of ``uri``'s callees; publish only if the findings changed.
        ``place``: the buffer's place, where the caller resolved it (an edit's): the check and its
        diagnostics use it, never resolving it again.
        """
        delay, propagate = 0.0, not external or refined
        external = external or refined
        previous, asked = self._tasks.pop(uri, None), self._requests.pop(uri, None)
        if previous is not None and asked is not None and not previous.done():
            previous.cancel()
            external = external or asked.external
            propagate = propagate or asked.propagate
            refined = refined and asked.refined
            delay = DEBOUNCE_S if debounce else 0.0
        task = asyncio.ensure_future(self._run(uri, delay, external, propagate, refined, place))
        self._tasks[uri] = task
        self._requests[uri] = CheckRequest(external, propagate, refined)
        self._quiet.clear()
        task.add_done_callback(lambda _: self._note_quiet())

    def _note_quiet(self) -> None:
        if not self._quiet.is_set() and all(task.done() for task in self._tasks.values()):
            self._quiet_since = time.monotonic()
            self._quiet.set()

    def stop_waiting(self) -> None:
        """Shutting down: background work waiting for quiet goes on at once (to its end)."""
        self._quiet_since = float("-inf")
        self._quiet.set()

    def wait_until_quiet(self, idle_s: float, at_most_s: float) -> None:
        """Block (on a background thread) until no check has been pending for ``idle_s``, or
        for ``at_most_s`` in all: the checks of keystrokes go first, background work still advances."""
        deadline = time.monotonic() + at_most_s
        while (left := deadline - time.monotonic()) > 0 and self._quiet.wait(left):
            idle = time.monotonic() - self._quiet_since
            if idle >= idle_s and self._quiet.is_set():
                return
            time.sleep(max(0.0, min(idle_s - idle, left)))

    def schedule_all(self, uris: Iterable[str] | None = None) -> None:
        for doc in self._server.open_documents():
            if uris is None or doc.uri in uris:
                self.schedule(doc.uri, external=True)

    def cancel(self, uri: str) -> None:
        for tasks in (self._tasks, self._refinements):
            task = tasks.pop(uri, None)
            if task is not None:
                task.cancel()
        self._requests.pop(uri, None)
        self._note_quiet()
        self.results.pop(uri, None)
        self._sent.pop(str(analysis_key(uri)), None)
        self._resolve(uri, [])

    async def findings(self, uri: str) -> list[Finding]:
        """The findings of the buffer's current text (waiting for its check if needed)."""
        doc = self._server.document(uri)
        if doc is None:
            return []
        cached = self.results.get(uri)
        if cached is not None and cached[0] == doc.version:
            return cached[1]
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(uri, []).append((doc.version, waiter))
        task = self._tasks.get(uri)
        if task is None or task.done():
            self.schedule(uri)
        return await waiter

    async def _run(
        self, uri: str, delay: float, external: bool, propagate: bool, refined: bool, place: Place | None
    ) -> None:
        try:
            await asyncio.sleep(delay)
            await self._server.settings_ready.wait()
            await self._check(uri, external, propagate, refined, place)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Half-typed code must never surface as an error in the editor.
            log.exception("Checking %s failed", uri)
            self._resolve(uri, self.results.get(uri, (None, []))[1])

    def _resolve(self, uri: str, findings: list[Finding]) -> None:
        for _, waiter in self._waiters.pop(uri, []):
            if not waiter.done():
                waiter.set_result(findings)

    def _subject(self, uri: str, place: Place | None) -> tuple[Place, Path, str] | None:
        """The buffer's place (``place``, else resolved now), and the path and text the analysis
        checks for it (a synced cell's are its whole notebook's); None for a buffer that is not
        open."""
        place = place if place is not None else self._server.place(uri)
        if place is None or place.document is None:
            return None
        if place.notebook is not None:
            return place, Path(place.notebook.path), place.notebook.text
        return place, place.key, place.document.source

    async def _check(
        self, uri: str, external: bool, propagate: bool, refined: bool, place: Place | None
    ) -> None:
        server = self._server
        subject = self._subject(uri, place)
        if subject is None or server.analysis is None:
            self._resolve(uri, [])
            return
        place, path, text = subject
        notebook, version, analysis = place.notebook, place.version, server.analysis
        # A re-check caused by another file must not make the analysis re-parse an unchanged buffer.
        sent = self._sent.get(str(path))
        changed = sent is None or sent[0] is not analysis or sent[1] != text
        started = time.perf_counter()
        findings, affected, for_jedi = await server.run_analysis(
            _check_buffer, analysis, path, text, changed, propagate
        )
        self._sent[str(path)] = (analysis, text)
        checked = time.perf_counter()
        if _moved_on(server, place, version, text) or server.analysis is not analysis:
            return  # stale: a newer check of this buffer is on its way
        if notebook is not None:
            findings = [moved for f in findings if (moved := notebook.in_cell(f, uri)) is not None]
        findings = [f for f in findings if shown(f)]
        unchanged = refined and self.results.get(uri) == (version, findings)
        self.results[uri] = (version, findings)
        if not unchanged:
            diagnostics = [to_diagnostic(server, place, f, version) for f in findings]
            server.diagnostics.set(
                SOURCE, uri, diagnostics, version, announce=external or not server.pull_diagnostics
            )
        log.debug(
            "%s v%s%s: %d findings%s, core %.1f ms, publish %.1f ms",
            path.name,
            version,
            " (jedi)" if refined else "",
            len(findings),
            " (unchanged)" if unchanged else "",
            1000 * (checked - started),
            1000 * (time.perf_counter() - checked),
        )
        self._resolve(uri, findings)
        if for_jedi:
            self._refine_later(uri, version, path, text)
        others = notebooks.cells_of(server, {path_to_uri(p) for p in affected})
        if notebook is not None and propagate:
            others |= {cell for cell, _, _ in notebook.cells}  # their findings may have moved
        others.discard(uri)
        if others:
            self.schedule_all(others)

    def _refine_later(self, uri: str, version: int | None, path: Path, text: str) -> None:
        previous = self._refinements.pop(uri, None)
        if previous is not None:
            previous.cancel()  # a jedi run already started still finishes: its answers stay useful
        self._refinements[uri] = asyncio.ensure_future(self._refine(uri, version, path, text))

    async def _refine(self, uri: str, version: int | None, path: Path, text: str) -> None:
        """Let jedi name the callees the check of this version left to it, then check again."""
        analysis = self._server.analysis
        if analysis is None:
            return

        def current() -> bool:
            doc = self._server.document(uri)
            return doc is not None and doc.version == version and self._server.analysis is analysis

        try:
            await asyncio.sleep(JEDI_IDLE_S)
            if not current():
                return
            started = time.perf_counter()
            loop = asyncio.get_running_loop()
            again = await loop.run_in_executor(self._jedi_thread, analysis.refine_with_jedi, path, text)
            log.debug("%s v%s: jedi %.1f ms", path.name, version, 1000 * (time.perf_counter() - started))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Asking jedi about %s failed", uri)
            return
        if again and current():
            self.schedule(uri, refined=True)


def _moved_on(server: JaxLanguageServer, place: Place, version: int | None, text: str) -> bool:
    """Whether ``place``'s buffer moved on from ``version`` and ``text`` (another edit, or its
    close): its document is the live one; a synced cell's notebook is joined again, since an
    edit of another cell changes the text checked."""
    if place.version != version or server.document(place.uri) is not place.document:
        return True
    if place.notebook is None:
        return False
    joined = notebooks.joined(server, place.uri)
    return joined is None or joined.text != text


def _check_buffer(
    analysis: Workspace, path: Path, text: str, changed: bool, propagate: bool
) -> tuple[list[Finding], set[Path], bool]:
    """(findings, the other files they affect, whether callees were left to jedi)."""
    if changed:
        analysis.set_document(path, text)
    findings = analysis.check_file(path)
    affected = analysis.affected_files(path) if propagate else set()
    return findings, affected, analysis.jedi.waiting(path, text)
