"""One JSON list of findings, the format tools consume (see the README).

In a notebook, `cell` is the cell's number (1-based, every cell counted) and the lines and
columns are the cell's own, as in the other human formats; `cell` is null in a Python file."""

from __future__ import annotations

from jax_lsp.cli.output import Report, display_path, one_based, place
from jax_lsp.core.findings import Edit, Finding, Span


def _location(report: Report, path: str, span: Span) -> dict:
    where = place(report, path, span)
    line, column, end_line, end_column = one_based(where.span)
    return {
        "path": display_path(path),
        "cell": where.cell,
        "line": line,
        "column": column,
        "end_line": end_line,
        "end_column": end_column,
    }


def _edit(report: Report, edit: Edit) -> dict:
    return {**_location(report, edit.path, edit.span), "new_text": edit.new_text}


def finding_to_json(finding: Finding, report: Report) -> dict:
    return {
        **_location(report, finding.path, finding.span),
        "code": finding.code,
        "severity": finding.severity.value,
        "message": finding.message,
        "fixes": [
            {"title": fix.title, "safe": fix.safe, "edits": [_edit(report, e) for e in fix.edits]}
            for fix in finding.fixes
        ],
    }


def render(report: Report) -> str:
    if not report.findings:  # most checks: what json.dumps writes, without importing json (start-up time)
        return "[]\n"
    import json

    return (
        json.dumps([finding_to_json(f, report) for f in report.findings], indent=2, ensure_ascii=False) + "\n"
    )
