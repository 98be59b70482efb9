"""The advisor's LSP adapter: lenses, inlay hints, hover, quick fixes, JAX191 diagnostics and
the commands, made from the decisions of `shown` and `suggested` and the advice `advised` keeps.

Advising runs workspace code, so it only starts on a user's request (lens, command), on the
save of a file whose sites were advised (to keep that advice fresh), or on any save when
`advise.onSave` is set; never in an untrusted workspace. It runs through the trace service it
is given (the trace's: one warm agent for both).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from jax_lsp.core.codes import PROJECT_URL
from jax_lsp.core.findings import Finding, Position, Span
from jax_lsp.engine.project import project_root
from jax_lsp.server.diagnostics import ADVISE_SOURCE, admitted, to_diagnostic
from jax_lsp.server.documents import path_to_uri
from jax_lsp.server.edits import edits_in_workspace
from jax_lsp.server.features.advisor import quick_fixes, shown, suggested, writing
from jax_lsp.server.features.advisor.advised import Advised, AdvisedFiles, advised
from jax_lsp.server.features.advisor.shown import ADVISE, COMPARE, RUN, WRITE
from jax_lsp.server.features.advisor.text import disk_text
from jax_lsp.server.features.advisor.words import log_line, not_compiled, why_suggested
from jax_lsp.server.logs import log
from jax_lsp.server.registry import REQUEST_FAILED, LanguageFeature
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.answer_cache import AnswerCache, cache_folder
from jax_lsp.trace.advisor.chart import chart_svg
from jax_lsp.trace.advisor.comparison import comparison_text, comparison_view
from jax_lsp.trace.advisor.contract import relative, written_policy_json
from jax_lsp.trace.advisor.examples import KeyLines, example_for, line_keys
from jax_lsp.trace.advisor.pipeline import CANCELLED, Cancel
from jax_lsp.trace.advisor.report import format_markdown
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.sites import DEFAULT, advise_anchors, anchor_of_line
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.advisor.write.writing import written_job
from jax_lsp.trace.advisor.write.written import WRITTEN, WrittenPolicy
from jax_lsp.trace.compile_target import CompileTarget, CompileTargetError, choose_target
from jax_lsp.trace.locations import PolicyAnchor
from jax_lsp.trace.mapping import LineEdit
from jax_lsp.trace.service import TraceService

if TYPE_CHECKING:
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer
    from jax_lsp.server.settings import ServerSettings

ADVICE_CHANGED = "jax-lsp/adviceChanged"  # a notification: {uri, position, stale[, comparison]}
# What Compare and Run answer, each a rendering of the advice (docs/advise.md). A client names the
# ones it reads in the commands' optional third argument, {"answer": [...]} (every one without it);
# jax-lsp/adviceChanged then carries those of the fresh advice, so that its view redraws unasked.
# The view, its text and the chart mark as suggested what the quick fix offers (`suggestion`).
RENDERINGS: dict[str, Callable[[Advice, Path, int | None], Any]] = {
    "markdown": format_markdown,
    "view": lambda advice, root, budget: comparison_view(advice, root, budget, suggested.suggestion),
    "text": lambda advice, root, budget: comparison_text(
        comparison_view(advice, root, budget, suggested.suggestion)
    ),
    "chart": lambda advice, root, budget: chart_svg(
        [advice], root, budget, names=False, suggest=suggested.suggestion
    ),
    "advice": lambda advice, root, budget: advice.to_contract(root, budget),
}
DOCS = f"{PROJECT_URL}/blob/main/docs/advise.md#the-example"


class AdvisorFeature(LanguageFeature):
    def __init__(self, server: JaxLanguageServer, service: TraceService, owns_service: bool = False):
        super().__init__(server)
        self.service = service
        self._owns_service = owns_service  # shut down with the feature (no trace feature to share)
        self.advised = AdvisedFiles()
        # per open file with `"file.py:LINE"` example keys: where their lines are in its buffer
        self.key_lines: dict[str, KeyLines] = {}
        self.viewed: tuple[str, ...] = ()  # the renderings the client's view of a comparison reads
        self.advising: dict[Path, set[Cancel]] = {}  # per file, its advises in flight (a close stops them)

    @property
    def trusted(self) -> bool:
        return self.server.settings.trusted

    # -- code lenses and inlay hints ---------------------------------------------------
    async def sites(self, path: Path) -> list[PolicyAnchor]:
        ls = self.server
        analysis = await ls.built_analysis()
        if analysis is None:
            return []
        return await ls.run_analysis(advise_anchors, analysis, str(path))

    async def site_of_line(self, path: Path, line: int) -> PolicyAnchor | None:
        """The site a 0-based ``line`` names: the one on it, else the one whose checkpoint call
        spans it (`anchor_of_line`: from ``jax.remat(`` to its closing parenthesis)."""
        ls = self.server
        analysis = await ls.built_analysis()
        if analysis is None:
            return None
        return await ls.run_analysis(anchor_of_line, analysis, str(path), line)

    async def code_lenses(self, place: Place) -> list[types.CodeLens]:
        path = place.file
        if not self.trusted or path is None or place.document is None:
            return []
        lenses = []
        for anchor in await self.sites(path):
            lsp_range = place.range(anchor.span)
            arguments = [place.uri, {"line": lsp_range.start.line, "character": lsp_range.start.character}]
            found = self.advised.at(path, anchor.span.start.line)
            lens = shown.lens(found, anchor.kind, await self._example(path, anchor.line) is not None)
            command = types.Command(title=lens.title, command=lens.command, arguments=arguments)
            lenses.append(types.CodeLens(range=lsp_range, command=command))
        return lenses

    async def inlay_hints(self, place: Place, lsp_range: types.Range) -> list[types.InlayHint]:
        path, doc = place.file, place.document
        if path is None or doc is None:
            return []
        lines, root = doc.lines, self._root(path)
        hints = []
        for found in self.advised.of(path):
            if found.current is None:
                continue
            for hint in shown.hints(found, path, root):
                if not (lsp_range.start.line <= hint.line <= lsp_range.end.line) or hint.line >= len(lines):
                    continue
                end = Position(hint.line, len(lines[hint.line].rstrip("\r\n")))
                hints.append(
                    types.InlayHint(
                        position=place.range(Span(end, end)).start,
                        label=" " + hint.label,
                        kind=types.InlayHintKind.Type,
                        padding_left=True,
                        tooltip=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hint.tooltip),
                    )
                )
        return sorted(hints, key=lambda hint: (hint.position.line, hint.position.character))

    async def _example(self, path: Path, line: int) -> str | None:
        """The example of the site on 1-based ``line`` of the buffer (`examples.example_for`), a
        line key read where its line is now."""
        ls = self.server
        analysis = await ls.built_analysis()
        if analysis is None:
            return None
        moved = self.key_lines.get(str(path))
        key_line = moved.key_at(line) if moved is not None else line
        examples, root = ls.settings.core.examples, self._examples_root(path)
        return await ls.run_analysis(example_for, analysis, path, line, examples, root, key_line)

    def _examples_root(self, path: Path) -> Path:
        """The folder `[tool.jax-lsp.examples]`' paths are relative to: the pyproject.toml's."""
        pyproject = self.server.settings.pyproject
        return pyproject.parent if pyproject is not None else project_root(path, self.server.roots)

    def _follow_key_lines(self, path: Path, edits: Sequence[LineEdit]) -> None:
        """Move the lines the file's line keys name with ``edits`` (from the buffer they were
        written for: the first edited since it opened, or since the settings were read)."""
        moved = self.key_lines.get(str(path))
        if moved is None:  # kept for a file without line keys too: a keystroke then reads none
            lines = line_keys(self.server.settings.core.examples, path, self._examples_root(path))
            moved = self.key_lines[str(path)] = KeyLines(lines)
        for edit in edits:
            moved.follow(edit)

    def analysis_built(self) -> None:
        """New settings (perhaps new example keys): line keys name the buffers' lines as they are."""
        self.key_lines.clear()

    def refresh(self) -> None:
        support = self.server.client_support
        if support.code_lens_refresh:
            self.server.workspace_code_lens_refresh(None)
        if support.inlay_hint_refresh:
            self.server.workspace_inlay_hint_refresh(None)

    def announce(self, path: Path, found: Advised) -> None:
        """Tell the client that the advice of a site changed (new, or stale), so that a view of
        it (VS Code's Compare panel) redraws: ``{uri, position, stale}``, the position the
        commands take, and with a fresh advice its ``comparison`` in the renderings the client's
        view asked for (`viewed`), so that it need not ask again."""
        uri = path_to_uri(path)
        start = self.server.to_lsp_range(uri, found.span).start
        position = {"line": start.line, "character": start.character}
        params: dict[str, Any] = {"uri": uri, "position": position, "stale": found.stale}
        if found.stale is None and self.viewed:
            comparison = self._comparison(found.advice, self._root(path), self._budget(), self.viewed)
            params["comparison"] = {**comparison, "stale": None, "quick_fix": self._quick_fix(found)}
        self.server.protocol.notify(ADVICE_CHANGED, params)

    # -- commands ------------------------------------------------------------------------
    def _arguments(self, command: str, arguments: tuple[Any, ...]) -> tuple[Path, Position]:
        if not self.trusted:
            raise JsonRpcException("Advising is disabled: the workspace is not trusted", REQUEST_FAILED)
        return self.file_place(command, "advise", arguments)

    async def advise_command(self, *arguments: Any) -> dict:
        path, position = self._arguments(ADVISE, arguments)
        with self.server.protocol.cancellation() as cancelled:
            advice = await self.advise(path, position, cancelled=cancelled, progress=True)
        return advice.to_contract(self._root(path), self._budget())

    async def compare_command(self, *arguments: Any) -> dict:
        """The site's comparison (advised first if it has none): the renderings asked for."""
        path, position = self._arguments(COMPARE, arguments[:2])
        answer = self._asked(arguments[2:])
        found = self.advised.at(path, position.line)
        if found is None or found.stale is not None:
            with self.server.protocol.cancellation() as cancelled:
                advice = await self.advise(path, position, cancelled=cancelled, progress=True)
            found = self.advised.at(path, position.line)
        else:
            advice = found.advice
        return {
            **self._comparison(advice, self._root(path), self._budget(), answer),
            "stale": found.stale if found is not None else None,
            "quick_fix": self._quick_fix(found),
        }

    async def run_command(self, *arguments: Any) -> dict:
        """The site advised again with each candidate's step run on the local accelerator
        (`advise --run`): its comparison, with the measured step times and peaks."""
        path, position = self._arguments(RUN, arguments[:2])
        answer = self._asked(arguments[2:])
        with self.server.protocol.cancellation() as cancelled:
            advice = await self.advise(path, position, cancelled=cancelled, progress=True, run=True)
        found = self.advised.at(path, position.line)
        return {
            **self._comparison(advice, self._root(path), self._budget(), answer),
            "quick_fix": self._quick_fix(found),
        }

    def _asked(self, extra: tuple[Any, ...]) -> tuple[str, ...]:
        """The renderings a command's optional third argument, ``{"answer": [...]}``, asks for
        (every one without it); a client that names them has a view that reads them (`viewed`)."""
        asked = extra[0].get("answer") if extra and isinstance(extra[0], dict) else None
        if not isinstance(asked, list):
            return tuple(RENDERINGS)
        self.viewed = tuple(name for name in RENDERINGS if name in asked)
        return self.viewed

    def _comparison(
        self, advice: Advice, root: Path, budget: int | None, answer: Sequence[str] = tuple(RENDERINGS)
    ) -> dict:
        """The renderings ``answer`` names (`RENDERINGS`): the comparison's ``view``
        (`trace.advisor.comparison`) and its ``text``, its chart, its Markdown table and the JSON
        contract: what Compare and Run answer."""
        return {name: RENDERINGS[name](advice, root, budget) for name in answer}

    def _root(self, path: Path) -> Path:
        return project_root(path, self.server.roots)

    def _budget(self) -> int | None:
        """The `advise.budget` setting: without one, nothing is suggested."""
        return self.server.settings.advise.budget

    async def advise(
        self,
        path: Path,
        position: Position,
        cancelled: asyncio.Future | None = None,
        progress: bool = False,
        run: bool = False,
    ) -> Advice:
        """The site's advice, through the advise pipeline (`trace.advisor.pipeline`), each step's
        answer shown as it arrives (``run``: with each candidate run on the local accelerator)."""
        anchor, line, request = await self._site_request(path, position)
        self.warn_unsaved(path, "the advice traces")
        target = self._target()
        traced_text = disk_text(path)
        example, root = request["example"], request["root"]
        loop = asyncio.get_running_loop()
        stop = Cancel()

        def keep(advice: Advice) -> None:  # on the pipeline's thread
            loop.call_soon_threadsafe(self._keep, path, anchor, advice, traced_text, stop)

        def steps(report: Callable[[str], None]) -> Advice:
            ask = functools.partial(
                advise,
                self.service,
                path,
                line,
                **request,
                run=run,
                budget=self._budget(),
                cache=AnswerCache(cache_folder(root)),
                progress=lambda event: report(event.text),
                cancel=stop,
                keep=keep,
            )
            tpu = target is not None and target.is_tpu
            advice = ask(compile=tpu, target=target)  # the estimate is shown first
            if (
                tpu
                and advice.ok
                and not advice.on_tpu
                and not_compiled(advice)
                and self._budget() is not None
            ):
                # no libtpu here (its note says so): the budget's check compiles on the CPU instead
                advice = replace(ask(compile=False, target=None), notes=advice.notes)
                keep(advice)
            return advice

        site = f"{path.name}:{line}"
        self.advising.setdefault(path, set()).add(stop)
        try:
            async with self.progress_of("advise", site, cancelled, progress, stop.cancel) as report:
                advice = await asyncio.to_thread(steps, report)
        finally:
            in_flight = self.advising.get(path, set())
            in_flight.discard(stop)
            if not in_flight:
                self.advising.pop(path, None)
        if stop.cancelled or advice.status == CANCELLED:
            log.info("Stopped advising %s", site)
        else:
            log.info("Advised %s", log_line(advice, site, example))
        if not advice.ok and advice.status != "cancelled":
            self._tell_failure(path, line, advice)
        return advice

    async def _site_request(self, path: Path, position: Position) -> tuple[PolicyAnchor | None, int, dict]:
        """The site at ``position`` (None where the line is not one), its 1-based line, and what
        the advisor is asked for it with: its column, example, roots, interpreter, trace options."""
        anchor = await self.site_of_line(path, position.line)
        line = anchor.line if anchor is not None else position.line + 1
        request = {
            "column": anchor.column if anchor is not None else position.column,
            "example": await self._example(path, line),
            "root": self._root(path),
            "import_root": self._import_root(path),
            "interpreter": self.server.settings.interpreter,
            "options": self.server.settings.trace.options,
        }
        return anchor, line, request

    async def settings_changed(self, previous: ServerSettings) -> None:
        """A new `advise.budget` or target: the advised sites advised again for it, each under a
        progress, and their lens, hover, quick fix and views told. The pipeline's cache answers
        what is already known (the estimate, the candidates an earlier check compiled), so a new
        budget compiles only what its suggestion needs that was never compiled."""
        now = self.server.settings
        new_target = (now.advise.target, now.core.compile_target) != (
            previous.advise.target,
            previous.core.compile_target,
        )
        if not self.trusted or (not new_target and now.advise.budget == previous.advise.budget):
            return
        for path in self.advised.paths():
            for found in self.advised.of(path):
                if found.stale is None and found.advice.ok:
                    await self.advise(path, found.span.start, progress=True)

    async def write_command(self, *arguments: Any) -> dict | None:
        """The quick fix "Write a policy for B": the site advised with every candidate compiled,
        its policy written for the `advise.budget` setting and compiled with its tags; where it
        fits and beats every named candidate that fits, its edits are applied (the tags, their
        import, the site's policy); otherwise a message says what to use or by how much nothing
        fits. Answers the outcome (the JSON's ``written_policy``)."""
        path, position = self._arguments(WRITE, arguments)
        budget = self._budget()
        if budget is None:
            raise JsonRpcException("Set advise.budget: a policy is written for a budget", REQUEST_FAILED)
        ls = self.server
        analysis = await ls.built_analysis()
        if analysis is None:
            raise JsonRpcException("The project is not analysed yet", REQUEST_FAILED)
        _, line, request = await self._site_request(path, position)
        job = functools.partial(
            written_job, self.service, analysis, path, line, budget, **request, target=self._target()
        )
        message = f"{path.name}:{line}: writing a policy for {format_bytes(budget)}"
        with ls.protocol.cancellation() as cancelled:
            outcome: WrittenPolicy = await self.run_job(job, "write", message, cancelled, True)
        if outcome.verdict == WRITTEN:
            await writing.apply_written(ls, outcome)
        else:
            ls.notify_user(f"{path.name}:{line}: {outcome.message}", types.MessageType.Info)
        return written_policy_json(outcome, self._root(path))

    def _import_root(self, path: Path) -> Path | None:
        analysis = self.server.analysis
        return analysis.imports.import_root(path) if analysis is not None else None

    def _tell_failure(self, path: Path, line: int, advice: Advice) -> None:
        where = relative(advice.error_path, self._root(path)) if advice.error_path else path.name
        message = (
            f"Advice for {path.name}:{line} failed: {where}:{advice.error_line or line}: {advice.message}"
        )
        if advice.status == "no_example":
            message += f" ({DOCS})"
        self.server.notify_user(message, types.MessageType.Error)

    def _keep(
        self, path: Path, anchor: PolicyAnchor | None, advice: Advice, traced_text: str | None, stop: Cancel
    ) -> None:
        """Keep ``advice`` (traced from ``traced_text``, the file on disk) for its site's lens,
        hints and fixes, show it, and tell the client's views of it; nothing of a stopped advise."""
        if anchor is None or stop.cancelled:
            return
        document = self.server.document(path_to_uri(path))
        buffer_text = document.source if document is not None else None
        kept = advised(path, anchor.span, anchor.kind, advice, traced_text, buffer_text)
        if kept is None:
            return
        self.advised.keep(path, kept)
        self._publish(path)
        self.refresh()
        self.announce(path, kept)

    def _target(self) -> CompileTarget | None:
        """What to compile for: the `advise.target` setting, else ``[tool.jax-lsp] target``, else
        this machine's TPU; None (the estimate alone) where the project's setting names none."""
        settings = self.server.settings
        try:
            return choose_target(
                settings.advise.target, settings.core.compile_target, given_by="advise.target"
            )
        except CompileTargetError as exc:
            self.server.notify_user(f"[tool.jax-lsp] target: {exc}", types.MessageType.Error)
            return None

    # -- quick fixes and JAX191 ----------------------------------------------------------
    async def code_actions(self, place: Place, params: types.CodeActionParams) -> list[types.CodeAction]:
        path, doc = place.file, place.document
        if path is None or doc is None or place.position is None:
            return []
        if params.context.only and not any(
            kind.startswith(types.CodeActionKind.QuickFix) for kind in params.context.only
        ):
            return []
        first, last = place.position.line, place.to_core(params.range.end).line
        budget = self._budget()
        actions = []
        for found in self.advised.of(path):
            if found.stale is not None or not (
                found.span.start.line <= last and first <= found.span.end.line
            ):
                continue
            offer = suggested.write_offer(found, budget)
            if offer is not None:
                actions.append(writing.write_action(offer, found, place))
            chosen = suggested.suggestion(found.advice, budget)
            if chosen is None:
                continue
            fix = suggested.advice_fix(found, chosen, budget, self._lines_of)
            if fix is None and found.kind == DEFAULT:
                fix = await quick_fixes.default_fix(self.server, path, found, chosen, budget)
            elif fix is None:
                why = why_suggested(found.advice, chosen, budget)
                fix = suggested.site_fix(path, doc.lines, doc.source, found, chosen, why)
                fix = await quick_fixes.importing_jax(self.server, fix, chosen.policy)
            elif fix.edits:
                fix = await quick_fixes.importing_jax(self.server, fix, chosen.policy)
            if fix is not None and fix.edits:  # none that only says what to do: the hover says it
                actions.append(self._action(fix, place))
        return actions

    def _quick_fix(self, found: Advised | None) -> dict | None:
        """What the quick fix offers at ``found``'s site, for Compare to mark and say: the
        suggested ``policy``, the fix's ``title`` where it edits, else its ``note`` (what to set
        and where); None where it offers nothing."""
        budget = self._budget()
        fresh = found is not None and found.stale is None
        chosen = suggested.suggestion(found.advice, budget) if found is not None and fresh else None
        if found is None or chosen is None:
            return None
        fix = suggested.advice_fix(found, chosen, budget, self._lines_of)
        if fix is None:  # the site's own value, or a checkpoint that takes one: edited on request
            why = why_suggested(found.advice, chosen, budget)
            fix = suggested.SuggestedFix(suggested.fix_title(chosen, why))
        return {"policy": chosen.policy, "title": None if fix.note else fix.title, "note": fix.note}

    def _lines_of(self, path: str) -> Sequence[str]:
        return self.server.lines_of(path_to_uri(path))

    def _action(self, fix: suggested.SuggestedFix, place: Place) -> types.CodeAction:
        """The LSP code action of ``fix``: its edits in the place's buffer, or in other files."""
        edit = edits_in_workspace(self.server, fix.edits, place)
        return types.CodeAction(title=fix.title, kind=types.CodeActionKind.QuickFix, edit=edit)

    def findings(self, place: Place) -> list[Finding]:
        return self._shown(place.file) if place.file is not None else []

    def _shown(self, path: Path) -> list[Finding]:
        """JAX191 on each site of ``path`` whose policy lists a name that changes nothing, as the
        selection a rule's finding passes admits it (noqa, select, severity)."""
        root = self._root(path)
        findings = [
            finding
            for found in self.advised.of(path)
            if found.stale is None
            for finding in suggested.no_effect_findings(path, found, root)
        ]
        return admitted(self.server, findings)

    def _publish(self, path: Path, place: Place | None = None) -> None:
        """`_shown`'s findings as diagnostics in ``path``'s buffer (``place``, where the caller
        has it); their fixes travel in the diagnostic's data, as a rule's do, for the buffer's
        version."""
        place = place if place is not None else self.server.place(path_to_uri(path))
        if place is None:
            return
        diagnostics = [
            to_diagnostic(self.server, place, f, place.version, ADVISE_SOURCE) for f in self._shown(path)
        ]
        self.server.publish_diagnostics(ADVISE_SOURCE, place.uri, diagnostics)

    # -- buffer events -------------------------------------------------------------------
    def did_change(self, place: Place, edits: Sequence[LineEdit]) -> None:
        """Advice follows the lines it is on; an edit of the site or of a residual's line makes
        it stale (its lens asks again; a save advises again)."""
        path = place.file
        if path is not None:
            self._follow_key_lines(path, edits)
        if path is None or not self.advised.holds(path):
            return
        for stale in self.advised.follow(path, edits):
            self.announce(path, stale)
        self._publish(path, place)

    async def did_save(self, place: Place) -> None:
        """Advise again each advised site of the saved file whose advice no longer describes it
        (stale, or advised from other text), or forget it where it cannot be advised; with
        `advise.onSave`, advise every site of the file that has an example."""
        ls, path = self.server, place.file
        await ls.settings_ready.wait()
        if path is None:
            return
        outdated = self.advised.outdated(path, disk_text(path))
        every = self.trusted and ls.settings.advise.on_save
        anchors = await self.sites(path)
        lines = {a.span.start.line for a in anchors if await self._example(path, a.line) is not None}
        again = {line for line in lines for a in outdated if a.holds(line)} if self.trusted else set()
        self.advised.drop(path, [a for a in outdated if not any(a.holds(line) for line in again)])
        if outdated:
            self._publish(path)
            self.refresh()
        for anchor in anchors:
            if anchor.span.start.line in again or (every and anchor.span.start.line in lines):
                await self.advise(path, anchor.span.start)

    async def hover(self, place: Place) -> types.Hover | None:
        """On an advised site's lines: what the advice says, in short."""
        path = place.file
        if path is None or place.position is None:
            return None
        found = self.advised.at(path, place.position.line)
        if found is None:
            return None
        quick_fix = self._quick_fix(found)
        markdown = shown.hover_markdown(found, self._budget(), quick_fix["note"] if quick_fix else None)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown))

    def did_close(self, place: Place) -> None:
        path = place.file
        if path is not None:
            self.key_lines.pop(str(path), None)
            for stop in self.advising.pop(path, set()):
                stop.cancel()
        if path is not None and self.advised.forget(path):
            self._publish(path)

    def shutdown(self) -> None:
        if self._owns_service:
            self.service.shutdown()
