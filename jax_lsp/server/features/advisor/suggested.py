"""What the editor suggests from a site's advice: the policy (for the `advise.budget` setting),
the quick fix that writes it (at the site, at the key that chooses it, or at the user's call of a
library's site), and JAX191 for each name of the current policy that changes nothing, with its
fixes. Decisions only, free of LSP types: edits are core `Edit`s, by path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jax_lsp.core.codes import CODES, NO_EFFECT
from jax_lsp.core.findings import Edit, Finding, Fix, Position, Span
from jax_lsp.server.features.advisor.advised import Advised
from jax_lsp.server.features.advisor.text import laid_out
from jax_lsp.server.features.advisor.words import why_suggested
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.report import no_effect_reason
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.advisor.table import short_policy
from jax_lsp.trace.advisor.user_call import UserCall, key_literal

QUICK_FIX = "Use the suggested policy"
WRITE_FIX = "Write a policy for {budget}"
CHANGED = "changed since the advice: advise again"

LinesOf = Callable[[str], Sequence[str]]  # a file's lines: the open buffer's, else the disk's


@dataclass(frozen=True)
class SuggestedFix:
    """A quick fix: its title and edits; or, where no edit can make the suggestion, no edits and
    a ``note`` that says what to set and where (the hover and Compare show it: an editor hides a
    disabled action, so none is sent)."""

    title: str
    edits: tuple[Edit, ...] = ()
    note: str | None = None


def suggestion(advice: Advice, budget: int | None) -> PolicyAdvice | None:
    """The policy to suggest for ``budget`` (the `advise.budget` setting: without one, nothing
    is suggested, since the current peak would make a budget the user never chose); None where
    the advice is not compiled yet or nothing beats the site's own policy."""
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


def site_fix(
    path: Path, lines: Sequence[str], source: str, advised: Advised, suggested: PolicyAdvice, why: str
) -> SuggestedFix:
    """The site's `policy=` value replaced by the suggestion, laid out in the project's line length."""
    text = laid_out(path, lines, source, advised.span, suggested.policy)
    return SuggestedFix(fix_title(suggested, why), (Edit(str(path), advised.span, text),))


def fix_title(suggested: PolicyAdvice, why: str) -> str:
    return f"{QUICK_FIX}: {short_policy(suggested.policy)} {why}"


def advice_fix(
    advised: Advised, suggested: PolicyAdvice, budget: int | None, lines_of: LinesOf
) -> SuggestedFix | None:
    """Where the site's own text is not what the fix edits: the fix at the user's call of a
    library's site, or at the key that chooses the policy; None for a plain site."""
    advice = advised.advice
    why = why_suggested(advice, suggested, budget)
    if advice.user_call is not None:
        return user_call_fix(advice.user_call, suggested, why, lines_of)
    if advice.selector is not None:
        return key_fix(advice, suggested, why, lines_of)
    return None


def key_fix(advice: Advice, suggested: PolicyAdvice, why: str, lines_of: LinesOf) -> SuggestedFix:
    """Where a key chooses the site's policy: the quick fix sets the key's literal default to
    the suggestion's key; without one (or without a key for the suggestion) its note says what
    to set and where, and the site is never replaced by a hard-coded policy."""
    select, setting = suggested.select, advice.setting
    short = suggested.policy.removeprefix("jax.checkpoint_policies.")
    if select is None:
        expression = advice.selector.expression if advice.selector is not None else "the key"
        reason = f"no value of {expression} selects {short}: add it to what that key chooses from"
        return SuggestedFix(f"{QUICK_FIX}: {short} {why}", note=reason)
    title = f"{QUICK_FIX}: set {select.name} to {select.key!r}"
    if setting is None:
        return SuggestedFix(
            f"{title} {why}", note=f"Set {select.expression} to {select.key!r}: {advice.setting_note}"
        )
    span = Span(Position(setting.line - 1, setting.column), Position(setting.line - 1, setting.end_column))
    lines = lines_of(setting.path)
    written = (
        lines[setting.line - 1][setting.column : setting.end_column] if setting.line <= len(lines) else ""
    )
    where = f"{Path(setting.path).name}:{setting.line}"
    if written != setting.text:
        return SuggestedFix(f"{title} {why}", note=f"{where} {CHANGED}")
    new_text = key_literal(select.key, setting.text)
    if new_text == setting.text:  # EasyLM's: the example overrides the project's default
        used = advice.selector.current if advice.selector is not None else None
        note = f"{where} already sets {select.name} to {select.key!r}" + (
            f"; the example ran with {used!r}: your run keeps that default unless it sets {select.name}"
            if used is not None
            else ""
        )
        return SuggestedFix(f"{title} {why}", note=note)
    return SuggestedFix(f"{title} ({where}) {why}", (Edit(setting.path, span, new_text),))


def user_call_fix(call: UserCall, suggested: PolicyAdvice, why: str, lines_of: LinesOf) -> SuggestedFix:
    """A site in a library: the quick fix replaces the value the user's call gives it (the
    policy, or the key that selects it); where the library makes the policy from the value
    otherwise, its note says so."""
    action, where = call.suggestion(suggested, f"{Path(call.path).name}:{call.line}")
    title = f"{QUICK_FIX}: {short_policy(action.removeprefix('policy='))}"
    new_text = call.new_text(suggested)
    if new_text is None:
        return SuggestedFix(f"{title} {why}", note=where)
    if not call.still_in(lines_of(call.path)):
        return SuggestedFix(f"{title} {why}", note=f"{where} {CHANGED}")
    span = Span(Position(call.line - 1, call.column), Position(call.end_line - 1, call.end_column))
    return SuggestedFix(f"{title} ({where}) {why}", (Edit(call.path, span, new_text),))


def write_offer(found: Advised, budget: int | None) -> str | None:
    """The title of the quick fix that writes a policy for ``budget`` at an advised site (the
    `advise.budget` setting): offered where the site's advice is ok and describes the buffer;
    None otherwise (without a budget, nothing is written)."""
    if budget is None or found.stale is not None or not found.advice.ok:
        return None
    return WRITE_FIX.format(budget=format_bytes(budget))


def unsaved_files(edits: Sequence[Edit], buffer_text: Callable[[str], str | None]) -> list[str]:
    """The files of ``edits`` whose open buffer differs from the file on disk, which the written
    policy's edits were made from: those edits are not applied there."""
    found = []
    for path in dict.fromkeys(e.path for e in edits):
        text = buffer_text(path)
        try:
            disk = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            disk = None
        if text is not None and text != disk:
            found.append(path)
    return found


def no_effect_findings(path: Path, advised: Advised, root: Path) -> list[Finding]:
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
