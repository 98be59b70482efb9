"""`path:line:col: CODE message` (`path:cell N:line:col` in a notebook), one finding a line, then the summary."""

from __future__ import annotations

from jax_lsp.cli.output import Report, place, summary


def render(report: Report) -> str:
    lines = []
    for finding in report.findings:
        where = place(report, finding.path, finding.span)
        lines.append(f"{where.label()}: {finding.code} {finding.message}\n")
    return "".join(lines) + summary(report)
