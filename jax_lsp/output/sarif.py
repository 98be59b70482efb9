"""SARIF 2.1.0, for code-scanning dashboards. Rule metadata comes from the rules' own docs."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

from jax_lsp import __version__, rules
from jax_lsp.core.model import Finding, Severity, Span
from jax_lsp.output import Report, display_path, one_based

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _level(severity: Severity) -> str:
    return "error" if severity is Severity.ERROR else "warning"


def _uri(path: str) -> str:
    shown = display_path(path)
    if Path(shown).is_absolute():
        return Path(shown).as_uri()
    return urllib.parse.quote(shown)


def _region(span: Span) -> dict:
    line, column, end_line, end_column = one_based(span)
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _rule(rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.docs(), "markdown": rule.docs()},
        "help": {"text": rule.docs(), "markdown": rule.docs()},
        "helpUri": rule.doc_url(),
        "defaultConfiguration": {"level": _level(rule.severity)},
    }


def _fix(fix) -> dict:
    by_path: dict[str, list] = {}
    for edit in fix.edits:
        by_path.setdefault(edit.path, []).append(
            {"deletedRegion": _region(edit.span), "insertedContent": {"text": edit.new_text}}
        )
    return {
        "description": {"text": fix.title + ("" if fix.safe else " (unsafe)")},
        "artifactChanges": [
            {"artifactLocation": {"uri": _uri(path)}, "replacements": replacements}
            for path, replacements in by_path.items()
        ],
    }


def _result(finding: Finding, index: dict[str, int]) -> dict:
    result = {
        "ruleId": finding.code,
        "level": _level(finding.severity),
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(finding.path)},
                    "region": _region(finding.span),
                }
            }
        ],
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    if finding.fixes:
        result["fixes"] = [_fix(f) for f in finding.fixes]
    return result


def render(report: Report) -> str:
    descriptors = [_rule(r) for r in rules.ALL_RULES]
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "jax-lsp",
                        "version": __version__,
                        "rules": descriptors,
                    }
                },
                # The core counts columns in code points, not SARIF's default UTF-16 units.
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, index) for f in report.findings],
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
