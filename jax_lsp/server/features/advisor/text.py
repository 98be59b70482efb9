"""The text an advice was computed from and is written into: the lines an edit made stale, the
suggested policy laid out within the project's line length, the file on disk."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from jax_lsp.core.findings import Position, Span
from jax_lsp.core.text.line_layout import fitted, indent_step, line_length
from jax_lsp.trace.mapping import LineEdit


def over_edit(span: Span, edit: LineEdit) -> Span:
    """The lines of a site that ``edit`` changed: from its first line (or the edit's, above it)
    to the last line the edit wrote (a policy put on a line of its own is still the site's)."""
    if edit.last_touched == sys.maxsize:  # the whole text: where it was
        return span
    first = min(span.start.line, edit.first)
    last = max(first, edit.last_touched + edit.shift, span.end.line + edit.shift)
    column = span.start.column if first == span.start.line else 0
    return Span(Position(first, column), Position(last, span.end.column))


def laid_out(path: Path, lines: Sequence[str], source: str, span: Span, value: str) -> str:
    """``value`` to write over the one-line ``span``, on a line of its own where the line would
    grow past the project's line length (`core.text.line_layout`)."""
    if span.start.line != span.end.line or span.start.line >= len(lines):
        return value
    line = lines[span.start.line]
    return fitted(line, span.start.column, span.end.column, value, line_length(path), indent_step(source))


def disk_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
