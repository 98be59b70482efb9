"""`jax-lsp trace`'s report of one trace, as a plain-text table (the hover's is Markdown:
`trace.mapping.hover_markdown`)."""

from __future__ import annotations

from jax_lsp.trace.mapping import decision_rows, report_header
from jax_lsp.trace.result import FAILED_UNDER_JAX, TraceResult


def trace_table(result: TraceResult) -> str:
    """A trace's report for the terminal: its header, what went wrong, a row per decision."""
    lines = report_header(result)
    if result.error is not None and result.status in FAILED_UNDER_JAX:
        lines.append(f"Error at line {result.error.line}: {result.error.text}")
    for mistake in result.silent:
        lines.append(f"Silent mistake at line {mistake.line}: {mistake.message}")
    rows = decision_rows(result)
    if rows:
        head = ("primitive", "decision", "returned", "line", "count")
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines.append("")
        for row in [head, *rows]:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return "\n".join(lines)
