"""Renderers for `jax-lsp check`: one module per `--output-format`.

Each module exposes ``render(report: Report) -> str``. Lines and columns are printed
1-based, columns counted in characters (the core's code points plus one).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jax_lsp.core.model import Finding, Severity, Span

FORMATS = ("full", "concise", "json", "github", "sarif")
# Formats read by programs: nothing but the report goes to stdout.
MACHINE_FORMATS = frozenset({"json", "github", "sarif"})


@dataclass(frozen=True)
class Report:
    findings: list[Finding]  # sorted, what remains after --fix
    source_lines: Callable[[str], list[str]] = lambda path: []
    fixed: int = 0  # findings removed by --fix
    fixed_files: int = 0
    unsafe_fixes: bool = False  # were unsafe fixes allowed?
    internal_errors: int = 0  # listed on stderr; the files they name were checked only in part


def display_path(path: str) -> str:
    """Relative to the working folder when under it (like ruff), else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(absolute)


def one_based(span: Span) -> tuple[int, int, int, int]:
    return (span.start.line + 1, span.start.column + 1, span.end.line + 1, span.end.column + 1)


def applicable(finding: Finding, unsafe: bool):
    """The fix `--fix` would apply to this finding, or None."""
    return next((f for f in finding.fixes if f.safe or unsafe), None)


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
    fixable = sum(applicable(f, report.unsafe_fixes) is not None for f in report.findings)
    hidden = sum(applicable(f, True) is not None for f in report.findings) - fixable
    note = f" ({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the `--unsafe-fixes` option)"
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option{note if hidden else ''}.")
    elif hidden:
        lines.append(f"No fixes available{note}.")
    return "\n".join(lines) + "\n"


def render(output_format: str, report: Report) -> str:
    if output_format not in FORMATS:
        raise ValueError(f"unknown output format {output_format!r}")
    return importlib.import_module(f"jax_lsp.output.{output_format}").render(report)
