"""Applying text edits given in the core's positions (0-based lines, code-point columns)."""

from __future__ import annotations

from collections.abc import Iterable

from jax_lsp.core.findings import Edit, Position


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
    from jax_lsp.core.text.decoding import split_lines  # here: `jax_lsp.core` is imported without the parser

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
