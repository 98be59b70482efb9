"""Renderers for `jax-lsp check`: one module per `--output-format`; and the tables of `jax-lsp
trace` (`trace_table`) and `jax-lsp advise` (`advisor_table`).

Each module exposes ``render(report: Report) -> str``. Lines and columns are printed
1-based, columns counted in characters (the core's code points plus one). A finding in a
notebook is shown in its cell: ``model.ipynb:cell 3:4:5`` (line and column within the cell).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

from jax_lsp.core.findings import Finding, Severity, Span
from jax_lsp.core.notebooks.files import is_notebook
from jax_lsp.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.notebooks.notebook import Notebook

FORMATS = ("full", "concise", "json", "github", "sarif")
# Formats read by programs: nothing but the report goes to stdout.
MACHINE_FORMATS = frozenset({"json", "github", "sarif"})


def _no_lines(path: str) -> list[str]:
    return []


def _no_notebook(path: str) -> Notebook | None:
    return None


class Report(Record):
    __slots__ = (
        "findings",
        "source_lines",
        "notebook",
        "fixed",
        "fixed_files",
        "unsafe_fixes",
        "internal_errors",
    )
    findings: list[Finding]  # sorted, what remains after --fix
    source_lines: Callable[[str], list[str]]
    notebook: Callable[[str], Notebook | None]  # a notebook file, as read
    fixed: int  # findings removed by --fix
    fixed_files: int
    unsafe_fixes: bool  # were unsafe fixes allowed?
    internal_errors: int  # listed on stderr; the files they name were checked only in part

    def __init__(
        self,
        findings: list[Finding],
        source_lines: Callable[[str], list[str]] = _no_lines,
        notebook: Callable[[str], Notebook | None] = _no_notebook,
        fixed: int = 0,
        fixed_files: int = 0,
        unsafe_fixes: bool = False,
        internal_errors: int = 0,
    ) -> None:
        self._assign(findings, source_lines, notebook, fixed, fixed_files, unsafe_fixes, internal_errors)


def display_path(path: str) -> str:
    """Relative to the working folder when under it (like ruff), else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(absolute)


class Place(Record):
    """Where a finding is shown: a span of the file, or of one cell of a notebook."""

    __slots__ = ("path", "cell", "span")
    path: str
    cell: int | None  # 1-based, every cell counted, as the notebook shows them
    span: Span

    def __init__(self, path: str, cell: int | None, span: Span) -> None:
        self._assign(path, cell, span)

    def label(self) -> str:
        line, column, _, _ = one_based(self.span)
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{display_path(self.path)}:{cell}{line}:{column}"


def notebook_reader() -> Callable[[str], Notebook | None]:
    """Reads each notebook on disk once, to show findings in its cells (None if unreadable)."""
    cache: dict[str, Notebook | None] = {}

    def notebook(path: str) -> Notebook | None:
        if not is_notebook(path):
            return None
        if path not in cache:
            from jax_lsp.core.notebooks.notebook import Notebook, NotebookError

            try:
                cache[path] = Notebook.read(Path(path).read_bytes())
            except (OSError, NotebookError):
                cache[path] = None
        return cache[path]

    return notebook


def place(report: Report, path: str, span: Span) -> Place:
    """A span of the core (a notebook's joined cells) as the cell it lies in."""
    notebook = report.notebook(path)
    placed = notebook.layout.to_cell(span) if notebook is not None else None
    return Place(path, *placed) if placed is not None else Place(path, None, span)


def cell_lines(report: Report, where: Place) -> list[str]:
    """The lines a place's span counts in: its cell's, or its file's."""
    from jax_lsp.core.text.decoding import split_lines  # here: only a notebook cell is split (start-up time)

    notebook = report.notebook(where.path)
    if where.cell is None or notebook is None:
        return report.source_lines(where.path)
    return split_lines(next(c.source for c in notebook.cells if c.number == where.cell))


def file_span(report: Report, path: str, span: Span) -> Span:
    """A span of the file itself, for formats that know no cells (github, sarif): in a notebook,
    where the cell's text is in the file's JSON, so a reader of the file (or of a diff) finds it."""
    where = place(report, path, span)
    notebook = report.notebook(path)
    if where.cell is None or notebook is None:
        return span
    start = notebook.file_position(where.cell, where.span.start.line, where.span.start.column)
    end = notebook.file_position(where.cell, where.span.end.line, where.span.end.column)
    return Span.of(*start, *end)


def one_based(span: Span) -> tuple[int, int, int, int]:
    return (span.start.line + 1, span.start.column + 1, span.end.line + 1, span.end.column + 1)


def count_label(findings: list[Finding]) -> str:
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = len(findings) - errors
    return " and ".join(_plural(n, word) for n, word in ((errors, "error"), (warnings, "warning")) if n)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def fixed_line(fixed: int, files: int) -> str:
    return f"Fixed {_plural(fixed, 'error')} in {_plural(files, 'file')}."


def summary(report: Report) -> str:
    """The closing lines of the human formats."""
    lines = []
    if report.fixed:
        lines.append(fixed_line(report.fixed, report.fixed_files))
    if report.internal_errors:
        errors = _plural(report.internal_errors, "internal error")
        lines.append(f"{errors} of jax-lsp (listed on stderr): the places they name were not checked.")
    if not report.findings:
        if not report.internal_errors:
            lines.append("All checks passed!")
        return "\n".join(lines) + "\n"
    lines.append(f"Found {count_label(report.findings)}.")
    fixable = sum(f.applicable_fix(report.unsafe_fixes) is not None for f in report.findings)
    hidden = sum(f.applicable_fix(unsafe=True) is not None for f in report.findings) - fixable
    note = f" ({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the `--unsafe-fixes` option)"
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option{note if hidden else ''}.")
    elif hidden:
        lines.append(f"No fixes available{note}.")
    return "\n".join(lines) + "\n"


def render(output_format: str, report: Report) -> str:
    if output_format not in FORMATS:
        raise ValueError(f"unknown output format {output_format!r}")
    return importlib.import_module(f"jax_lsp.cli.output.{output_format}").render(report)
