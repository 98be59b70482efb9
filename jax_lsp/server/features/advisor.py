"""The policy advisor in the editor: a code lens per site, inlay hints on the lines that make
saved residuals, a hover, "Compare policies" (Markdown and a chart), the quick fix "Use the
suggested policy".

Advising runs workspace code, so it only starts on a user's request (lens, command), on the
save of a file whose sites were advised (to keep that advice fresh), or on any save when
`advise.onSave` is set; never in an untrusted workspace. It shares the trace's agent.

An advice describes the text it was computed from: an edit of its site or of a line whose
residual it shows makes it stale (the lens asks again), as does advice of a file on disk that
differs from the buffer; stale advice shows no figures, hints, warnings or fixes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from jax_lsp.core.codes import CODES, NO_EFFECT, PROJECT_URL
from jax_lsp.core.findings import Edit, Finding, Fix, Position, Span
from jax_lsp.engine.project import project_root
from jax_lsp.server.diagnostics import ADVISE_SOURCE, admitted, to_diagnostic
from jax_lsp.server.documents import path_to_uri
from jax_lsp.server.edits import workspace_edit
from jax_lsp.server.features.advice_text import disk_text, laid_out, over_edit
from jax_lsp.server.features.advice_words import lens_summary, log_line, target_name, why_suggested
from jax_lsp.server.features.trace import TraceFeature
from jax_lsp.server.logs import log
from jax_lsp.server.registry import REQUEST_FAILED, LanguageFeature
from jax_lsp.trace.advisor.advice import Advice, PolicyAdvice, relative
from jax_lsp.trace.advisor.chart import chart_svg
from jax_lsp.trace.advisor.comparison import comparison_text, comparison_view
from jax_lsp.trace.advisor.hints import line_hints
from jax_lsp.trace.advisor.report import (
    format_markdown,
    no_effect_reason,
    short_policy,
)
from jax_lsp.trace.advisor.request import advise_and_run, example_for, fit_checked, submit_advise, with_runs
from jax_lsp.trace.advisor.sites import DEFAULT, advise_anchors, checkpointed_lines, default_policy_edits
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.advisor.user_call import UserCall, key_literal
from jax_lsp.trace.compile_target import CompileTarget, CompileTargetError, choose_target
from jax_lsp.trace.locations import PolicyAnchor
from jax_lsp.trace.mapping import LineEdit
from jax_lsp.trace.service import TraceService

if TYPE_CHECKING:
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer

ADVISE = "jax-lsp.advisePolicy"
COMPARE = "jax-lsp.comparePolicies"
RUN = "jax-lsp.runPolicies"
ADVICE_CHANGED = "jax-lsp/adviceChanged"  # a notification: {uri, position, stale}, for views of an advice
DOCS = f"{PROJECT_URL}/blob/main/docs/advise.md#the-example"
QUICK_FIX = "Use the suggested policy"
EDITED = "the site changed since it was advised"
FROM_DISK = "advised from the file on disk, not this buffer: save to advise again"


@dataclass(frozen=True)
class Advised:
    """An advice and where its site's `policy=` value is in the buffer (followed through edits)."""

    advice: Advice
    span: Span  # the policy= value (a site without one: the checkpoint's name), 0-based code points
    residual_lines: tuple[int, ...]  # 0-based lines of the current policy's residuals, in this file
    kind: str = "site"  # the anchor's: "site", or DEFAULT for a checkpoint without a policy
    traced_text: str | None = None  # the file as the agent read it
    stale: str | None = None  # why the advice may no longer describe the buffer (EDITED, FROM_DISK)

    def moved(self, shift: int) -> Advised:
        """The site's span ``shift`` lines down (its residual lines move on their own)."""
        span = Span(
            Position(self.span.start.line + shift, self.span.start.column),
            Position(self.span.end.line + shift, self.span.end.column),
        )
        return replace(self, span=span)


class AdvisorFeature(LanguageFeature):
    def __init__(self, server: JaxLanguageServer):
        super().__init__(server)
        self._own_service: TraceService | None = None
        self.results: dict[str, dict[int, Advised]] = {}  # path -> first line of the site -> advice

    @property
    def service(self) -> TraceService:
        """The trace's service (one warm agent for both), or one of its own."""
        trace = self.server.features.find(TraceFeature)
        if trace is not None:
            return trace.service
        if self._own_service is None:
            self._own_service = TraceService()
        return self._own_service

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

    async def code_lenses(self, place: Place) -> list[types.CodeLens]:
        path = place.file
        if not self.trusted or path is None or place.document is None:
            return []
        lenses = []
        for anchor in await self.sites(path):
            lsp_range = place.range(anchor.span)
            arguments = [place.uri, {"line": lsp_range.start.line, "character": lsp_range.start.character}]
            found = self.advised_at(path, anchor.span.start.line)
            if found is not None and found.stale is not None:
                title = f"Advise policy again: {found.stale}"
                command = types.Command(title=title, command=ADVISE, arguments=arguments)
            elif found is not None and found.advice.ok and found.advice.current is not None:
                title = f"{lens_summary(found.advice, found.advice.current)} · Compare policies"
                command = types.Command(title=title, command=COMPARE, arguments=arguments)
            elif self._example(path, anchor.line) is None:
                title = "Advise policy: give an example (see docs/advise.md)"
                command = types.Command(title=title, command=ADVISE, arguments=arguments)
            else:
                title = (
                    "Advise policy (none given: JAX's default)" if anchor.kind == DEFAULT else "Advise policy"
                )
                command = types.Command(title=title, command=ADVISE, arguments=arguments)
            lenses.append(types.CodeLens(range=lsp_range, command=command))
        return lenses

    async def inlay_hints(self, place: Place, lsp_range: types.Range) -> list[types.InlayHint]:
        path, doc = place.file, place.document
        if path is None or doc is None:
            return []
        lines, root = doc.lines, self._root(path)
        hints = []
        for advised in self.results.get(str(path), {}).values():
            current = advised.advice.current
            if current is None or advised.stale is not None:
                continue
            residuals = [r for r in current.residuals if r.path == str(path) and r.line is not None]
            analysis = await self.server.built_analysis()
            function_lines = (
                await self.server.run_analysis(checkpointed_lines, analysis, str(path), advised.span.start)
                if analysis is not None
                else None
            )
            placed = list(zip(advised.residual_lines, residuals))
            for hint in line_hints(placed, function_lines, advised.span.start.line, root):
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

    def _example(self, path: Path, line: int) -> str | None:
        ls = self.server
        settings = ls.settings
        pyproject = settings.pyproject
        root = pyproject.parent if pyproject is not None else project_root(path, ls.roots)
        return example_for(path, line, dict(settings.core.examples), root)

    def refresh(self) -> None:
        support = self.server.client_support
        if support.code_lens_refresh:
            self.server.workspace_code_lens_refresh(None)
        if support.inlay_hint_refresh:
            self.server.workspace_inlay_hint_refresh(None)

    def announce(self, path: Path, advised: Advised) -> None:
        """Tell the client that the advice of a site changed (new, or stale), so that a view of
        it (VS Code's Compare panel) refreshes: ``{uri, position, stale}``, the position the
        commands take."""
        uri = path_to_uri(path)
        start = self.server.to_lsp_range(uri, advised.span).start
        position = {"line": start.line, "character": start.character}
        self.server.protocol.notify(
            ADVICE_CHANGED, {"uri": uri, "position": position, "stale": advised.stale}
        )

    # -- commands ------------------------------------------------------------------------
    def _arguments(self, command: str, arguments: tuple[Any, ...]) -> tuple[Path, Position]:
        if not self.trusted:
            raise JsonRpcException("Advising is disabled: the workspace is not trusted", REQUEST_FAILED)
        return self.file_place(command, "advise", arguments)

    async def advise_command(self, *arguments: Any) -> dict:
        path, position = self._arguments(ADVISE, arguments)
        with self.server.protocol.cancellation() as cancelled:
            advice = await self.advise(path, position, cancelled=cancelled, progress=True)
        return advice.to_contract(self._root(path), self._budget(advice))

    async def compare_command(self, *arguments: Any) -> dict:
        """The Markdown table of the site's advice and its chart, an SVG (advised first if it has none)."""
        path, position = self._arguments(COMPARE, arguments)
        advised = self.advised_at(path, position.line)
        if advised is None or advised.stale is not None:
            with self.server.protocol.cancellation() as cancelled:
                advice = await self.advise(path, position, cancelled=cancelled, progress=True)
            advised = self.advised_at(path, position.line)
        else:
            advice = advised.advice
        root, budget = self._root(path), self._budget(advice)
        return {
            **self._comparison(advice, root, budget),
            "stale": advised.stale if advised is not None else None,
        }

    async def run_command(self, *arguments: Any) -> dict:
        """The site advised again with each candidate's step run on the local accelerator
        (`advise --run`): its comparison, with the measured step times and peaks."""
        path, position = self._arguments(RUN, arguments)
        with self.server.protocol.cancellation() as cancelled:
            advice = await self.advise(path, position, cancelled=cancelled, progress=True, run=True)
        return self._comparison(advice, self._root(path), self._budget(advice))

    def _comparison(self, advice: Advice, root: Path, budget: int | None) -> dict:
        """The comparison's ``view`` (`trace.advisor.comparison`), as ``text`` too, its Markdown
        table, its chart and the JSON contract: what Compare and Run answer."""
        view = comparison_view(advice, root, budget)
        return {
            "markdown": format_markdown(advice, root, budget),
            "view": view,
            "text": comparison_text(view),
            "chart": chart_svg([advice], root, budget),
            "advice": advice.to_contract(root, budget),
        }

    def _root(self, path: Path) -> Path:
        return project_root(path, self.server.roots)

    def _budget(self, advice: Advice) -> int | None:
        """The `advise.budget` setting: without one, nothing is suggested (the current peak
        would make a budget the user never chose)."""
        return self.server.settings.advise.budget

    def suggestion(self, advice: Advice) -> PolicyAdvice | None:
        budget = self._budget(advice)
        if budget is None or not advice.ok or not advice.compiled:
            return None  # uncompiled: the budget's check (`advise`) has not answered yet
        suggested = advice.suggest(budget)
        if suggested is None or suggested.current:
            return None
        current = advice.current
        if (
            current is not None
            and current.recompute_flops == suggested.recompute_flops
            and (advice.budgeted_bytes(current) or 0) <= (advice.budgeted_bytes(suggested) or 0)
        ):
            return None  # no better than what the site has
        return suggested

    async def advise(
        self,
        path: Path,
        position: Position,
        cancelled: asyncio.Future | None = None,
        progress: bool = False,
        run: bool = False,
    ) -> Advice:
        """The site's advice (``run``: with each candidate run on the local accelerator)."""
        ls = self.server
        settings = ls.settings
        root = self._root(path)
        anchor = next(
            (a for a in await self.sites(path) if a.span.start.line == position.line),
            None,
        )
        line = anchor.line if anchor is not None else position.line + 1
        self.warn_unsaved(path, "the advice traces")
        target = self._target()
        traced_text = disk_text(path)
        example = self._example(path, line)

        request: dict[str, Any] = {
            "column": anchor.column if anchor is not None else position.column,
            "example": example,
            "root": root,
            "import_root": ls.analysis.imports.import_root(path) if ls.analysis is not None else None,
            "interpreter": settings.interpreter,
            "target": target,
        }

        def job(compile: bool) -> functools.partial:
            # a compile takes seconds a candidate: it runs under the compile's limits
            options = settings.trace.options.for_compile() if compile else settings.trace.options
            submit = advise_and_run if run and not compile else submit_advise
            return functools.partial(
                submit, self.service, path, line, options=options, compile=compile, **request
            )

        site = f"{path.name}:{line}"
        advice: Advice = await self.run_job(job(False), "advise", site, cancelled, progress)
        self._keep(path, anchor, advice, traced_text)
        if advice.ok and target is not None and target.is_tpu:
            # the estimate is shown at once; the compiled figures replace it when they arrive
            compiling = f"{site}: compiling each policy for {target.name}"
            compiled: Advice = await self.run_job(job(True), "advise", compiling, cancelled, progress)
            if compiled.ok:
                advice = with_runs(compiled, advice) if run else compiled
                self._keep(path, anchor, advice, traced_text)
        budget = self._budget(advice)
        if advice.ok and budget is not None and not advice.compiled:
            # as `advise --budget`: the candidates the suggestion depends on, compiled (`fit.py`)
            checking = functools.partial(
                fit_checked,
                advice,
                budget,
                self.service,
                path,
                line,
                options=settings.trace.options,
                **request,
            )
            message = f"{site}: compiling the candidates for the {format_bytes(budget)} budget"
            advice = await self.run_job(checking, "advise", message, cancelled, progress)
            self._keep(path, anchor, advice, traced_text)
        log.info("Advised %s", log_line(advice, site, example))
        if not advice.ok and advice.status != "cancelled":
            where = relative(advice.error_path, root) if advice.error_path else path.name
            message = (
                f"Advice for {path.name}:{line} failed: {where}:{advice.error_line or line}: {advice.message}"
            )
            if advice.status == "no_example":
                message += f" ({DOCS})"
            ls.notify_user(message, types.MessageType.Error)
        return advice

    def _keep(self, path: Path, anchor: PolicyAnchor | None, advice: Advice, traced_text: str | None) -> None:
        """Keep ``advice`` (traced from ``traced_text``, the file on disk) for its site's lens,
        hints and fixes, show it, and tell the client's views of it."""
        current = advice.current
        # Under jax_remat3 an `unsupported` advice still carries the names the new remat ignores.
        if anchor is not None and (advice.ok or (current is not None and current.no_effect)):
            lines = tuple(
                r.line - 1
                for r in (current.residuals if current is not None else ())
                if r.path == str(path) and r.line is not None
            )
            document = self.server.document(path_to_uri(path))
            differs = document is not None and document.source != traced_text
            advised = Advised(
                advice, anchor.span, lines, anchor.kind, traced_text, FROM_DISK if differs else None
            )
            by_line = self.results.setdefault(str(path), {})
            for old in [
                line
                for line, a in by_line.items()
                if a.span.start.line <= anchor.span.start.line <= a.span.end.line
            ]:
                del by_line[old]  # its stale advice, perhaps over more lines
            by_line[anchor.span.start.line] = advised
            self._publish(path)
            self.refresh()
            self.announce(path, advised)

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

    async def code_actions(self, place: Place, params: types.CodeActionParams) -> list[types.CodeAction]:
        path, doc = place.file, place.document
        if path is None or doc is None or place.position is None:
            return []
        if params.context.only and not any(
            kind.startswith(types.CodeActionKind.QuickFix) for kind in params.context.only
        ):
            return []
        first, last = place.position.line, place.to_core(params.range.end).line
        actions = []
        for advised in self.results.get(str(path), {}).values():
            if advised.stale is not None or not (
                advised.span.start.line <= last and first <= advised.span.end.line
            ):
                continue
            suggested = self.suggestion(advised.advice)
            if suggested is None:
                continue
            why = self._why(advised.advice, suggested)
            if advised.advice.user_call is not None:  # a site in a library: the user's call is edited
                actions.append(self._edit_user_call(advised.advice.user_call, suggested, why))
                continue
            if advised.advice.selector is not None:
                actions.append(self._set_key(advised.advice, suggested, why))
                continue
            text = laid_out(path, doc.lines, doc.source, advised.span, suggested.policy)
            edits = [types.TextEdit(range=place.range(advised.span), new_text=text)]
            if advised.kind == DEFAULT:
                edits = await self._pass_policy(path, advised.span, suggested.policy, place)
                if not edits:
                    continue
            actions.append(
                types.CodeAction(
                    title=f"{QUICK_FIX}: {short_policy(suggested.policy)} {why}",
                    kind=types.CodeActionKind.QuickFix,
                    edit=workspace_edit(self.server, {place.uri: edits}),
                )
            )
        return actions

    async def _pass_policy(self, path: Path, span: Span, policy: str, place: Place) -> list[types.TextEdit]:
        """At a checkpoint without a policy: the edits that pass ``policy`` in the form its
        function takes (none when the buffer no longer has it there)."""
        ls = self.server
        analysis = await ls.built_analysis()
        if analysis is None:
            return []
        edits = await ls.run_analysis(default_policy_edits, analysis, str(path), span.start, policy)
        return [types.TextEdit(range=place.range(e.span), new_text=e.new_text) for e in edits or ()]

    def _no_effect_findings(self, path: Path, advised: Advised, root: Path) -> list[Finding]:
        """JAX191 for each name of the site's policy that changes nothing, with its fixes: drop
        the name (the text the agent traced), and on the first, use the ready-made policy that
        keeps the same residuals and recomputes the same. No fix where a key chooses the policy."""
        advice, current = advised.advice, advised.advice.current
        if current is None:
            return []
        fixable = advice.selector is None
        same = [
            p
            for p in advice.same_as(current)
            if p.recompute_flops == current.recompute_flops and p.select is None and not p.current
        ]
        ready = min(same, key=lambda p: ("(" in p.policy, len(p.policy))) if same and fixable else None

        def replace_with(title: str, text: str, safe: bool) -> Fix:
            return Fix(title, safe, (Edit(str(path), advised.span, text),))

        findings = []
        for index, entry in enumerate(current.no_effect):
            fixes = []
            if fixable and entry.without is not None:
                title = f"Drop {entry.name!r} from the policy (it changes nothing)"
                fixes.append(replace_with(title, entry.without, True))
            if ready is not None and index == 0:
                # It keeps the same for this example; another example may tell them apart.
                title = f"Use {short_policy(ready.policy)} (keeps the same)"
                fixes.append(replace_with(title, ready.policy, False))
            message = f"{no_effect_reason(entry, root)}: the policy keeps the same without it"
            severity = CODES[NO_EFFECT].severity
            findings.append(Finding(str(path), NO_EFFECT, severity, message, advised.span, tuple(fixes)))
        return findings

    def findings(self, place: Place) -> list[Finding]:
        return self._shown(place.file) if place.file is not None else []

    def _shown(self, path: Path) -> list[Finding]:
        """JAX191 on each site of ``path`` whose policy lists a name that changes nothing, as the
        selection a rule's finding passes admits it (noqa, select, severity)."""
        root = self._root(path)
        findings = [
            finding
            for advised in self.results.get(str(path), {}).values()
            if advised.stale is None
            for finding in self._no_effect_findings(path, advised, root)
        ]
        return admitted(self.server, findings)

    def _publish(self, path: Path) -> None:
        """`_shown`'s findings as diagnostics; their fixes travel in the diagnostic's data, as a
        rule's do, for the buffer's version."""
        uri = path_to_uri(path)
        document = self.server.document(uri)
        version = document.version if document is not None else None
        diagnostics = [to_diagnostic(self.server, uri, f, version, ADVISE_SOURCE) for f in self._shown(path)]
        self.server.publish_diagnostics(ADVISE_SOURCE, uri, diagnostics)

    def _why(self, advice: Advice, suggested: PolicyAdvice) -> str:
        return why_suggested(advice, suggested, self._budget(advice))

    def _set_key(self, advice: Advice, suggested: PolicyAdvice, why: str) -> types.CodeAction:
        """Where a key chooses the site's policy: the quick fix sets the key's literal default to
        the suggestion's key; without one (or without a key for the suggestion) it is disabled and
        says what to do, and the site is never replaced by a hard-coded policy."""
        select, setting = suggested.select, advice.setting
        short = suggested.policy.removeprefix("jax.checkpoint_policies.")
        if select is None:
            expression = advice.selector.expression if advice.selector is not None else "the key"
            reason = f"no value of {expression} selects {short}: add it to what that key chooses from"
            return _disabled(f"{QUICK_FIX}: {short} {why}", reason)
        title = f"{QUICK_FIX}: set {select.name} to {select.key!r}"
        if setting is None:
            return _disabled(
                f"{title} {why}", f"Set {select.expression} to {select.key!r}: {advice.setting_note}"
            )
        ls = self.server
        uri = path_to_uri(setting.path)
        span = Span(
            Position(setting.line - 1, setting.column), Position(setting.line - 1, setting.end_column)
        )
        lines = ls.lines_of(uri)
        written = (
            lines[setting.line - 1][setting.column : setting.end_column] if setting.line <= len(lines) else ""
        )
        where = f"{Path(setting.path).name}:{setting.line}"
        if written != setting.text:
            return _disabled(f"{title} {why}", f"{where} changed since the advice: advise again")
        edit = types.TextEdit(
            range=ls.to_lsp_range(uri, span), new_text=key_literal(select.key, setting.text)
        )
        return types.CodeAction(
            title=f"{title} ({where}) {why}",
            kind=types.CodeActionKind.QuickFix,
            edit=workspace_edit(ls, {uri: [edit]}),
        )

    def _edit_user_call(self, call: UserCall, suggested: PolicyAdvice, why: str) -> types.CodeAction:
        """A site in a library: the quick fix replaces the value the user's call gives it (the
        policy, or the key that selects it); where the library makes the policy from the value
        otherwise, it is disabled and says so."""
        action, where = call.suggestion(suggested, f"{Path(call.path).name}:{call.line}")
        title = f"{QUICK_FIX}: {short_policy(action.removeprefix('policy='))}"
        new_text = call.new_text(suggested)
        if new_text is None:
            return _disabled(f"{title} {why}", where)
        ls = self.server
        uri = path_to_uri(call.path)
        if not call.still_in(ls.lines_of(uri)):
            return _disabled(f"{title} {why}", f"{where} changed since the advice: advise again")
        span = Span(Position(call.line - 1, call.column), Position(call.end_line - 1, call.end_column))
        edit = types.TextEdit(range=ls.to_lsp_range(uri, span), new_text=new_text)
        return types.CodeAction(
            title=f"{title} ({where}) {why}",
            kind=types.CodeActionKind.QuickFix,
            edit=workspace_edit(ls, {uri: [edit]}),
        )

    # -- buffer events -------------------------------------------------------------------
    def did_change(self, place: Place, edits: Sequence[LineEdit]) -> None:
        """Advice follows the lines it is on; an edit of the site or of a residual's line makes
        it stale (its lens asks again; a save advises again)."""
        path = place.file
        if path is None or str(path) not in self.results:
            return
        advised = self.results[str(path)]
        for edit in edits:
            kept = {}
            for item in advised.values():
                shift = edit.moved(item.span.start.line, item.span.end.line)
                line_shifts = [edit.moved(line, line) for line in item.residual_lines]
                if shift is None or None in line_shifts:  # what was advised changed
                    stale = replace(item, span=over_edit(item.span, edit), residual_lines=(), stale=EDITED)
                    kept[stale.span.start.line] = stale
                    if item.stale is None:
                        self.announce(path, stale)
                    continue
                lines = tuple(line + (s or 0) for line, s in zip(item.residual_lines, line_shifts))
                moved = replace(item.moved(shift), residual_lines=lines)
                kept[moved.span.start.line] = moved
            advised = kept
        self.results[str(path)] = advised
        self._publish(path)

    async def did_save(self, place: Place) -> None:
        """Advise again each advised site of the saved file whose advice no longer describes it
        (stale, or advised from other text), or forget it where it cannot be advised; with
        `advise.onSave`, advise every site of the file that has an example."""
        ls, path = self.server, place.file
        await ls.settings_ready.wait()
        if path is None:
            return
        saved = disk_text(path)
        advised = self.results.get(str(path), {})
        outdated = [a for a in advised.values() if a.stale is not None or a.traced_text != saved]
        every = self.trusted and ls.settings.advise.on_save
        anchors = await self.sites(path)
        lines = {a.span.start.line for a in anchors if self._example(path, a.line) is not None}
        again = {line for line in lines for a in outdated if a.span.start.line <= line <= a.span.end.line}
        again = again if self.trusted else set()
        for item in outdated:
            if not any(item.span.start.line <= line <= item.span.end.line for line in again):
                advised.pop(item.span.start.line, None)
        if outdated:
            self._publish(path)
            self.refresh()
        for anchor in anchors:
            if anchor.span.start.line in again or (every and anchor.span.start.line in lines):
                await self.advise(path, anchor.span.start)

    def advised_at(self, path: Path, line: int) -> Advised | None:
        """The advice of the site on 0-based ``line``: the one that starts there, else one whose
        (stale) lines hold it."""
        advised = self.results.get(str(path), {})
        return advised.get(line) or next(
            (a for a in advised.values() if a.span.start.line <= line <= a.span.end.line), None
        )

    async def hover(self, place: Place) -> types.Hover | None:
        """On an advised site's lines: what the advice says, in short."""
        path = place.file
        if path is None or place.position is None:
            return None
        found = self.advised_at(path, place.position.line)
        if found is None:
            return None
        advice, current = found.advice, found.advice.current
        parts = [f"**jax-lsp advice** ({target_name(advice)}, jax {advice.jax_version or '?'})", ""]
        if found.stale is not None:
            parts.append(f"Outdated: {found.stale}.")
        elif current is not None:
            parts.append(f"- current `{short_policy(current.policy)}`: {lens_summary(found.advice, current)}")
            suggested = self.suggestion(advice)
            if suggested is not None:
                parts.append(
                    f"- suggested `{short_policy(suggested.policy)}`: {lens_summary(found.advice, suggested)} "
                    f"{self._why(advice, suggested)}"
                )
            elif self._budget(advice) is None:
                parts.append("- no suggestion: set `advise.budget` (e.g. `24GiB`) to get one")
            parts.append(f"- {len(advice.policies)} candidates: Compare policies (the lens) shows them")
        else:
            parts.append(f"{advice.status}: {advice.message}")
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n".join(parts))
        )

    def did_close(self, place: Place) -> None:
        path = place.file
        if path is not None and self.results.pop(str(path), {}):
            self._publish(path)

    def shutdown(self) -> None:
        if self._own_service is not None:
            self._own_service.shutdown()


def _disabled(title: str, reason: str) -> types.CodeAction:
    """A quick fix that cannot apply, and why (a client lists it greyed out, with the reason)."""
    return types.CodeAction(
        title=title, kind=types.CodeActionKind.QuickFix, disabled=types.CodeActionDisabled(reason=reason)
    )


def register(server: JaxLanguageServer) -> None:
    feature = AdvisorFeature(server)
    server.add_feature(feature)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    async def inlay_hint(ls: JaxLanguageServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        try:
            place = ls.place(params.text_document.uri)
            return await feature.inlay_hints(place, params.range) if place is not None else []
        except Exception:
            log.exception("Inlay hints for %s failed", params.text_document.uri)
            return []

    @server.command(ADVISE)
    async def advise_policy(ls, *arguments):  # pygls resolves annotations here: keep none
        return await feature.advise_command(*arguments)

    @server.command(COMPARE)
    async def compare_policies(ls, *arguments):
        return await feature.compare_command(*arguments)

    @server.command(RUN)
    async def run_policies(ls, *arguments):
        return await feature.run_command(*arguments)
