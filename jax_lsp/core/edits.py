"""Applying text edits given in the core's positions (0-based lines, code-point columns)."""

from __future__ import annotations

from collections.abc import Iterable

from jax_lsp.core.model import Edit, Finding, Fix, Position
from jax_lsp.core.source import split_lines


class OverlappingEdits(ValueError):
    pass


def _offset(line_starts: list[int], text: str, position: Position) -> int:
    line = min(position.line, len(line_starts) - 1)
    start = line_starts[line]
    end = line_starts[line + 1] if line + 1 < len(line_starts) else len(text)
    content = text[start:end].rstrip("\r\n")
    return start + min(position.column, len(content))


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits of one file. Raises OverlappingEdits otherwise."""
    line_starts = [0]
    for line in split_lines(text)[:-1]:
        line_starts.append(line_starts[-1] + len(line))
    ranges = sorted(
        (
            (_offset(line_starts, text, e.span.start), _offset(line_starts, text, e.span.end), e.new_text)
            for e in edits
        ),
        key=lambda r: (r[0], r[1]),
    )
    pieces, cursor = [], 0
    for start, end, new_text in ranges:
        if start < cursor:
            raise OverlappingEdits(f"edits overlap at offset {start}")
        pieces += [text[cursor:start], new_text]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


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


def choose_fixes(findings: Iterable[Finding], unsafe: bool = False) -> list[Fix]:
    """One round of fixes that can be applied together: each finding's first safe fix (or
    unsafe too), in source order, skipping any that overlaps one already chosen. Fixes left
    out are offered again when the fixed text is checked again."""
    chosen: list[Fix] = []
    edits: list[Edit] = []
    for finding in sorted(findings, key=lambda f: f.sort_key):
        fix = next((f for f in finding.fixes if f.safe or unsafe), None)
        if (
            fix is None
            or not fix.edits
            or _self_overlapping(fix)
            or any(_overlaps(e, edits) for e in fix.edits)
        ):
            continue
        chosen.append(fix)
        edits.extend(fix.edits)
    return chosen
