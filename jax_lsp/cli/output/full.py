"""Ruff-like: the finding, its source line with a caret under the range, the fix, a summary."""

from __future__ import annotations

from jax_lsp.cli.output import Place, Report, cell_lines, place, summary
from jax_lsp.core.findings import Finding

TAB = "    "


def _printable(text: str) -> str:
    """Control characters as visible placeholders one cell wide: a source line must not
    drive the terminal (escape sequences), and the caret below it must still line up."""
    return "".join(
        chr(0x2400 + ord(c))
        if ord(c) < 0x20 and c != "\t"
        else "\u2421"
        if c == "\x7f"
        else "\ufffd"
        if 0x80 <= ord(c) < 0xA0
        else c
        for c in text
    )


def _width(text: str) -> int:
    """Terminal cells: wide (CJK, emoji) characters take two, tabs are shown as four spaces."""
    import unicodedata  # here: a clean check shows no line (start-up time)

    cells = 0
    for char in text:
        if char == "\t":
            cells += len(TAB)
        elif unicodedata.combining(char):
            continue
        else:
            cells += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return cells


def _snippet(finding: Finding, where: Place, lines: list[str]) -> list[str]:
    """The line of ``where`` (numbered in its cell, in a notebook) with carets under the span."""
    start, end = where.span.start, where.span.end
    if not 0 <= start.line < len(lines):
        return []
    source = _printable(lines[start.line].rstrip("\r\n"))
    stop = end.column if end.line == start.line else len(source)
    gutter = str(start.line + 1)
    pad = " " * len(gutter)
    carets = "^" * max(1, _width(source[start.column : stop]))
    return [
        f"{pad} |",
        f"{gutter} | {source.replace(chr(9), TAB)}".rstrip(),
        f"{pad} | {' ' * _width(source[: start.column])}{carets} {finding.code}",
        f"{pad} |",
    ]


def _finding(finding: Finding, report: Report) -> str:
    where = place(report, finding.path, finding.span)
    fix = finding.applicable_fix(report.unsafe_fixes)
    marker = " [*]" if fix is not None else ""
    out = [f"{where.label()}: {finding.code}{marker} {finding.message}"]
    out += _snippet(finding, where, cell_lines(report, where))
    for option in finding.fixes:
        out.append(f"  = help: {option.title}{'' if option.safe else ' (unsafe fix)'}")
    return "\n".join(out) + "\n\n"


def render(report: Report) -> str:
    return "".join(_finding(f, report) for f in report.findings) + summary(report)
