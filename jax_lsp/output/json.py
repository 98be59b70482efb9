"""One JSON list of findings, the format tools consume (see the README)."""

from __future__ import annotations

import json

from jax_lsp.core.model import Edit, Finding
from jax_lsp.output import Report, display_path, one_based


def _range(span) -> dict:
    line, column, end_line, end_column = one_based(span)
    return {"line": line, "column": column, "end_line": end_line, "end_column": end_column}


def _edit(edit: Edit) -> dict:
    return {"path": display_path(edit.path), **_range(edit.span), "new_text": edit.new_text}


def finding_to_json(finding: Finding) -> dict:
    return {
        "path": display_path(finding.path),
        **_range(finding.span),
        "code": finding.code,
        "severity": finding.severity.value,
        "message": finding.message,
        "fixes": [
            {"title": fix.title, "safe": fix.safe, "edits": [_edit(e) for e in fix.edits]}
            for fix in finding.fixes
        ],
    }


def render(report: Report) -> str:
    return json.dumps([finding_to_json(f) for f in report.findings], indent=2, ensure_ascii=False) + "\n"
