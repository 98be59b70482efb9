"""`path:line:col: CODE message`, one finding a line, then the summary."""

from __future__ import annotations

from jax_lsp.output import Report, display_path, one_based, summary


def render(report: Report) -> str:
    lines = []
    for finding in report.findings:
        line, column, _, _ = one_based(finding.span)
        lines.append(f"{display_path(finding.path)}:{line}:{column}: {finding.code} {finding.message}\n")
    return "".join(lines) + summary(report)
