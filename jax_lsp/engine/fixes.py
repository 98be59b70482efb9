"""The one fix loop, shared by `jax-lsp check --fix` and the editor's fix-all.

A round applies the fixes that can go together (each finding's applicable fix, none
overlapping another), gives the fixed texts to the workspace as its buffers, and checks
again: a fix can reveal another (a completed signature lets a delegation be fixed) or change
findings in other files (a policy used across modules). Fixes left out of a round are offered
again against the re-checked text. The loop stops when no fix applies; it stops early, and says
so, when a fix did not remove its finding (it would be applied again and again) or after
MAX_ROUNDS rounds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from jax_lsp.core.findings import Edit, Finding, Fix
from jax_lsp.core.text.edits import apply_edits
from jax_lsp.engine.workspace import Workspace

MAX_ROUNDS = 10

Findings = dict[str, list[Finding]]
Recheck = Callable[[], tuple[Findings, list[str]]]


class FixedFile(Protocol):
    """A file being fixed: the text the core checks, edited in place."""

    @property
    def text(self) -> str: ...

    def accepts(self, edit: Edit) -> bool: ...

    def apply(self, edits: list[Edit]) -> None: ...


class TextBuffer:
    """A file whose text is the one the core checks (a notebook's is not: see the CLI)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def accepts(self, edit: Edit) -> bool:
        return True

    def apply(self, edits: list[Edit]) -> None:
        self.text = apply_edits(self.text, edits)


@dataclass
class FixRun:
    findings: Findings  # what remains after the last round
    errors: list[str]  # the last check's, and why the loop stopped early
    applied: Counter[str] = field(default_factory=Counter)  # fixes applied, by the file of their first edit


def _overlaps(edit: Edit, chosen: list[Edit]) -> bool:
    # Two insertions at one point conflict too: their order would be a guess.
    return any(
        (edit.span.start < other.span.end and other.span.start < edit.span.end)
        or edit.span.start == other.span.start
        for other in chosen
        if other.path == edit.path
    )


def _self_overlapping(fix: Fix) -> bool:
    """Edits of one fix that cover the same text (insertions at one point are fine: kept in order)."""
    return any(
        a.path == b.path and a.span.start < b.span.end and b.span.start < a.span.end
        for i, a in enumerate(fix.edits)
        for b in fix.edits[i + 1 :]
    )


def _choose(
    findings: Iterable[Finding], unsafe: bool, accepts: Callable[[Edit], bool]
) -> list[tuple[Finding, Fix]]:
    chosen: list[tuple[Finding, Fix]] = []
    edits: list[Edit] = []
    for finding in sorted(findings, key=lambda f: f.sort_key):
        fix = finding.applicable_fix(unsafe)
        if (
            fix is None
            or not fix.edits
            or _self_overlapping(fix)
            or any(_overlaps(e, edits) for e in fix.edits)
            or not all(accepts(e) for e in fix.edits)
        ):
            continue
        chosen.append((finding, fix))
        edits.extend(fix.edits)
    return chosen


def choose_fixes(
    findings: Iterable[Finding], unsafe: bool = False, accepts: Callable[[Edit], bool] = lambda edit: True
) -> list[Fix]:
    """One round of fixes that can be applied together: each finding's applicable fix, in source
    order, skipping any that overlaps one already chosen or has an edit `accepts` refuses."""
    return [fix for _, fix in _choose(findings, unsafe, accepts)]


def _every(findings: Findings) -> list[Finding]:
    return [finding for in_file in findings.values() for finding in in_file]


def _not_converged(how: str, findings: Findings, unsafe: bool) -> str:
    fixable = sum(finding.applicable_fix(unsafe) is not None for finding in _every(findings))
    return f"fixes did not converge{how}: {fixable} fixable findings remain; stopped"


def _identity(finding: Finding) -> tuple[str, str, str]:
    # Not the span: the fixes of the round move the text around it.
    return finding.path, finding.code, finding.message


def _a_finding_stayed(fixed: list[Finding], before: Findings, after: Findings) -> bool:
    """Is a finding whose fix was applied found again? (Counted, as a file may hold twins.)"""
    count_before = Counter(map(_identity, _every(before)))
    count_after = Counter(map(_identity, _every(after)))
    removed = Counter(map(_identity, fixed))
    return any(count_after[key] > count_before[key] - n for key, n in removed.items())


def _apply(ws: Workspace, fixes: list[Fix], target: Callable[[str], FixedFile | None]) -> None:
    edits_by_path: dict[str, list[Edit]] = {}
    for fix in fixes:
        for edit in fix.edits:
            edits_by_path.setdefault(edit.path, []).append(edit)
    for path, edits in edits_by_path.items():
        file = target(path)
        assert file is not None  # every edit was accepted
        file.apply(edits)
        ws.set_document(path, file.text)


def fix_until_stable(
    ws: Workspace,
    findings: Findings,
    errors: list[str],
    recheck: Recheck,
    target: Callable[[str], FixedFile | None],
    unsafe: bool = False,
) -> FixRun:
    """Apply fixes in rounds until none applies; `ws` is left holding the fixed texts.

    `findings` (per file) and `errors` are those of the current texts; `recheck()` checks again
    after each round, with `ws`; `target(path)` is the file a fix may edit, or None where fixes
    may not go (a file that cannot be read, another buffer than the one fixed).
    """
    run = FixRun(findings, list(errors))

    def accepts(edit: Edit) -> bool:
        file = target(edit.path)
        return file is not None and file.accepts(edit)

    for done in range(MAX_ROUNDS + 1):
        chosen = _choose(_every(run.findings), unsafe, accepts)
        if not chosen:
            break
        if done == MAX_ROUNDS:
            run.errors.append(_not_converged(f" in {MAX_ROUNDS} rounds", run.findings, unsafe))
            break
        _apply(ws, [fix for _, fix in chosen], target)
        run.applied.update(fix.edits[0].path for _, fix in chosen)
        before = run.findings
        run.findings, run.errors = recheck()
        if _a_finding_stayed([finding for finding, _ in chosen], before, run.findings):
            run.errors.append(_not_converged("", run.findings, unsafe))
            break
    return run
