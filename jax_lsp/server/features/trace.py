"""The trace in the editor: code lenses, the `jax-lsp.tracePolicy` command, progress,
cancellation, and the results as `jax-lsp trace` diagnostics and hover Markdown.

Tracing runs workspace code, so it only ever starts on a user's request (lens, command) or
on save when `trace.onSave` is set, and never in an untrusted workspace.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from jax_lsp.core.codes import Family, family_of
from jax_lsp.core.findings import Position
from jax_lsp.engine.project import project_root
from jax_lsp.server.diagnostic_data import TraceData
from jax_lsp.server.diagnostics import TRACE_SOURCE, admitted, note_diagnostic, to_diagnostic
from jax_lsp.server.documents import path_to_uri
from jax_lsp.server.logs import log
from jax_lsp.server.registry import HOVER_SEPARATOR, REQUEST_FAILED, LanguageFeature
from jax_lsp.trace.locations import default_checkpoint_on, no_policy_result, policy_anchors
from jax_lsp.trace.mapping import LineEdit, TraceNote, follow_edit, hover_markdown, trace_notes
from jax_lsp.trace.result import FAILED_UNDER_JAX, TraceResult, TraceStatus
from jax_lsp.trace.service import TraceService

if TYPE_CHECKING:
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer


SOURCE = TRACE_SOURCE
COMMAND = "jax-lsp.tracePolicy"


class TraceFeature(LanguageFeature):
    def __init__(self, server: JaxLanguageServer):
        super().__init__(server)
        self.service = TraceService()
        # (policy path, 1-based line) -> the latest result there and its notes
        self.results: dict[tuple[str, int], tuple[TraceResult, list[TraceNote]]] = {}
        self._learning: asyncio.Future | None = None

    # -- state ---------------------------------------------------------------------------
    @property
    def trusted(self) -> bool:
        return self.server.settings.trusted

    def lens_title(self) -> str:
        env = self.service.environment(self.server.settings.interpreter)
        if env and env.get("jax_version") and env.get("platform"):
            return f"Trace policy (jax {env['jax_version']}, {env['platform']})"
        return "Trace policy"

    # -- code lens -----------------------------------------------------------------------
    async def code_lenses(self, place: Place) -> list[types.CodeLens]:
        ls, path = self.server, place.file
        if not self.trusted or path is None or place.document is None or await ls.built_analysis() is None:
            return []
        anchors = await ls.run_analysis(policy_anchors, ls.analysis, str(path))
        title = self.lens_title()
        if anchors and title == "Trace policy" and not self._learning:
            # Only a file with policies starts the agent (jax's import costs a second of CPU).
            self._learning = asyncio.ensure_future(self.learn_environment())
        lenses = []
        for anchor in anchors:
            start = place.range(anchor.span).start
            arguments = [place.uri, {"line": start.line, "character": start.character}]
            lenses.append(
                types.CodeLens(
                    range=place.range(anchor.span),
                    command=types.Command(title=title, command=COMMAND, arguments=arguments),
                )
            )
        return lenses

    async def learn_environment(self) -> None:
        """Start the agent and learn its jax version and platform, for the lens titles."""
        # The `interpreter` setting names the agent's Python: never start one in another.
        await self.server.settings_ready.wait()
        if not self.trusted:
            return
        before = self.lens_title()
        try:
            await asyncio.to_thread(
                self.service.probe_environment,
                self.server.settings.interpreter,
                str(self.server.roots[0]) if self.server.roots else None,
            )
        except Exception:
            log.exception("Starting the trace agent failed")
        self._learning = None
        if self.lens_title() != before:
            self.refresh_lenses()

    def refresh_lenses(self) -> None:
        if self.server.client_support.code_lens_refresh:
            self.server.workspace_code_lens_refresh(None)

    # -- tracing -------------------------------------------------------------------------
    async def trace_command(self, *arguments: Any) -> dict:
        await self.server.settings_ready.wait()  # the `interpreter` and trace settings apply
        if not self.trusted:
            raise JsonRpcException("Tracing is disabled: the workspace is not trusted", REQUEST_FAILED)
        path, position = self.file_place(COMMAND, "trace", arguments)
        with self.server.protocol.cancellation() as cancelled:
            result, notes = await self.trace(path, position, cancelled=cancelled, progress=True)
        return {**result.to_json(), "notes": [self._note_json(n) for n in notes]}

    async def trace(
        self, path: Path, position: Position, cancelled: asyncio.Future | None = None, progress: bool = False
    ) -> tuple[TraceResult, list[TraceNote]]:
        ls = self.server
        settings = ls.settings
        root = project_root(path, ls.roots)
        import_root = ls.analysis.imports.import_root(path) if ls.analysis is not None else None
        analysis = await ls.built_analysis()
        checkpoint = (
            await ls.run_analysis(default_checkpoint_on, analysis, str(path), position.line + 1)
            if analysis is not None
            else None
        )
        if checkpoint is not None:  # nothing to run: one answer, and no error anywhere
            answer = no_policy_result(checkpoint)
            log.info("Trace of %s:%d: %s", path.name, position.line + 1, answer.message)
            return answer, []
        if ls.document(path_to_uri(path)) is not None:
            self.warn_unsaved(path, "the trace runs")
        result: TraceResult = await self.run_job(
            functools.partial(
                self.service.submit_trace,
                path,
                position.line + 1,
                position.column,
                root=root,
                import_root=import_root,
                interpreter=settings.interpreter,
                options=settings.trace.options,
            ),
            "trace",
            f"{path.name}:{position.line + 1}",
            cancelled,
            progress,
        )
        notes = await self._publish(path, position, result)
        if result.platform:
            self.refresh_lenses()
        if result.status is TraceStatus.NEEDS_RUN:  # valid code: what the trace needs, as information
            ls.notify_user(
                f"Trace of {path.name}:{position.line + 1}: {result.message}", types.MessageType.Info
            )
        elif not result.ok and result.status not in (*FAILED_UNDER_JAX, TraceStatus.CANCELLED):
            ls.notify_user(
                f"Trace of {path.name}:{position.line + 1} failed: {result.message}", types.MessageType.Error
            )
        return result, notes

    async def did_save(self, place: Place) -> None:
        """`trace.onSave`: trace every policy site of the saved file."""
        ls, path = self.server, place.file
        await ls.settings_ready.wait()  # a save can come before the settings are read
        if not (self.trusted and ls.settings.trace.on_save) or ls.analysis is None or path is None:
            return
        anchors = await ls.run_analysis(policy_anchors, ls.analysis, str(path))
        for anchor in [a for a in anchors if a.kind == "site"]:
            await self.trace(path, anchor.span.start)

    # -- results -------------------------------------------------------------------------
    async def _publish(self, path: Path, position: Position, result: TraceResult) -> list[TraceNote]:
        ls = self.server
        if result.status is TraceStatus.CANCELLED:
            return []
        touched = {str(path)} | {p for p in _paths_of(result)}
        static = []
        analysis = ls.analysis
        for file in touched:
            try:
                static += await ls.run_analysis(analysis.check_file, file) if analysis is not None else []
            except Exception:
                log.exception("Static check of %s for the trace failed", file)
        key = (str(path), result.policy.line if result.policy else position.line + 1)
        previous = self.results.get(key, (None, []))[1]
        self.results[key] = (result, trace_notes(result, static))
        for file in touched | {n.path for n in previous}:
            self._publish_file(file)
        return self.results[key][1]

    def _publish_file(self, file: str) -> None:
        """The file's notes as diagnostics: those with a code as findings, through the
        selection a rule's pass through (noqa, select, severity); what a trace decided as is."""
        uri = path_to_uri(Path(file))
        place = self.server.place(uri)
        if place is None:
            return
        notes = [n for _, notes in self.results.values() for n in notes if n.path == file]
        findings = admitted(self.server, [n.finding() for n in notes if n.code is not None])
        diagnostics = [
            to_diagnostic(
                self.server,
                place,
                f,
                None,
                SOURCE,
                TraceData(f.code) if family_of(f.code) is Family.RULE else None,
            )
            for f in findings
        ]
        diagnostics += [
            note_diagnostic(self.server, place, n.span, n.severity, n.message, code=None, source=SOURCE)
            for n in notes
            if n.code is None
        ]
        self.server.publish_diagnostics(SOURCE, uri, diagnostics)

    def _note_json(self, note: TraceNote) -> dict:
        uri = path_to_uri(Path(note.path))
        return {
            "uri": uri,
            "range": self.server.converter.unstructure(self.server.to_lsp_range(uri, note.span)),
            "severity": note.severity.value,
            "code": note.code,
            "confirms": note.confirms,
            "message": note.message,
        }

    def did_change(self, place: Place, edits: Sequence[LineEdit]) -> None:
        """Move the trace's diagnostics with the lines they are on; drop those an edit touched."""
        file = str(place.file) if place.file is not None else None
        if file is None or not any(n.path == file for _, notes in self.results.values() for n in notes):
            return
        for key, (result, notes) in self.results.items():
            for edit in edits:
                notes = follow_edit(notes, file, edit)
                result = _follow_policy(result, file, edit)
            self.results[key] = (result, notes)
        self._publish_file(file)

    def did_close(self, place: Place) -> None:
        """Forget the results of the closed file's policies."""
        path = place.file
        for key in [k for k in self.results if path is not None and k[0] == str(path)]:
            del self.results[key]

    async def hover(self, place: Place) -> types.Hover | None:
        """The trace report of every result with a note or its policy on the hovered line."""
        path = place.file
        if path is None or place.position is None:
            return None
        line = place.position.line
        reports = [
            hover_markdown(result)
            for result, notes in self.results.values()
            if any(n.path == str(path) and n.span.start.line <= line <= n.span.end.line for n in notes)
            or (
                result.policy
                and result.policy.path == str(path)
                and result.policy.line - 1 <= line <= result.policy.end_line - 1
            )
        ]
        if not reports:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=HOVER_SEPARATOR.join(reports))
        )

    def shutdown(self) -> None:
        self.service.shutdown()  # kills every agent, and so every trace


def _follow_policy(result: TraceResult, path: str, edit: LineEdit) -> TraceResult:
    """The result with its policy's lines moved by ``edit`` (where its hover report shows)."""
    policy = result.policy
    if policy is None or policy.path != path:
        return result
    shift = edit.moved(policy.line - 1, policy.end_line - 1)
    if not shift:  # above the edit, or edited: the last known lines stay
        return result
    return replace(result, policy=replace(policy, line=policy.line + shift, end_line=policy.end_line + shift))


def _paths_of(result: TraceResult) -> set[str]:
    found = {d.path for d in result.decisions if d.path}
    found |= {m.path for m in result.silent} | {r.path for r in result.rejected}
    if result.error is not None and result.error.path:
        found.add(result.error.path)
    return found


def register(server: JaxLanguageServer) -> None:
    feature = TraceFeature(server)
    server.add_feature(feature)

    @server.command(COMMAND)
    async def trace_policy(ls, *arguments):  # pygls resolves annotations here: keep none
        return await feature.trace_command(*arguments)
