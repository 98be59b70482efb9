"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request."""

from __future__ import annotations

from jax_lsp.core.model import Severity
from jax_lsp.output import Report, display_path, one_based


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    out = []
    for finding in report.findings:
        line, column, end_line, end_column = one_based(finding.span)
        level = "error" if finding.severity is Severity.ERROR else "warning"
        props = (
            f"file={_property(display_path(finding.path))},line={line},col={column},"
            f"endLine={end_line},endColumn={end_column},title={_property(f'jax-lsp ({finding.code})')}"
        )
        out.append(f"::{level} {props}::{_data(finding.message)}\n")
    return "".join(out)
