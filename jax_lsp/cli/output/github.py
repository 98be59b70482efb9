"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request.

A notebook is one JSON file to GitHub: a finding in a cell points at the line and column of
the file where that cell's text is (the line a diff of the file shows), and its message starts
with the cell position (`model.ipynb:cell 3:4:5: ...`) that Jupyter users look for."""

from __future__ import annotations

from jax_lsp.cli.output import Report, display_path, file_span, one_based, place
from jax_lsp.core.findings import Severity


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    out = []
    for finding in report.findings:
        line, column, end_line, end_column = one_based(file_span(report, finding.path, finding.span))
        where = place(report, finding.path, finding.span)
        message = f"{where.label()}: {finding.message}" if where.cell is not None else finding.message
        level = "error" if finding.severity is Severity.ERROR else "warning"
        props = (
            f"file={_property(display_path(finding.path))},line={line},col={column},"
            f"endLine={end_line},endColumn={end_column},title={_property(f'jax-lsp ({finding.code})')}"
        )
        out.append(f"::{level} {props}::{_data(message)}\n")
    return "".join(out)
