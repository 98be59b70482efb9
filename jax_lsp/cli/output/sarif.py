"""SARIF 2.1.0, for code-scanning dashboards. Every code of the registry is a rule descriptor;
a rule's full description is its own docs.

A finding in a notebook cell points at the file's line and column where the cell's text is
(code-scanning shows the file's own lines); the location's message and properties say the
cell and the position within it. Its fixes are left out: they edit the cell's text, which
SARIF's replacements of the file's bytes cannot express."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

from jax_lsp import __version__, rules
from jax_lsp.cli.output import Report, display_path, file_span, one_based, place
from jax_lsp.core.codes import CODES, Code
from jax_lsp.core.findings import Finding, Severity, Span

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFORMATION: "note"}


def _uri(path: str) -> str:
    shown = display_path(path)
    if Path(shown).is_absolute():
        return Path(shown).as_uri()
    return urllib.parse.quote(shown)


def _region(span: Span) -> dict:
    line, column, end_line, end_column = one_based(span)
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _descriptor(code: Code) -> dict:
    descriptor = {
        "id": code.code,
        "name": code.name,
        "shortDescription": {"text": code.summary},
    }
    rule = rules.get_rule(code.code)
    if rule is not None:
        docs = rule.docs()
        descriptor["fullDescription"] = {"text": docs, "markdown": docs}
        descriptor["help"] = {"text": docs, "markdown": docs}
    descriptor["helpUri"] = code.doc_url
    descriptor["defaultConfiguration"] = {"level": _LEVELS[code.severity]}
    return descriptor


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


def _result(finding: Finding, index: dict[str, int], report: Report) -> dict:
    where = place(report, finding.path, finding.span)
    location: dict = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(finding.path)},
            "region": _region(file_span(report, finding.path, finding.span)),
        }
    }
    if where.cell is not None:
        location["message"] = {"text": where.label()}
        location["properties"] = {"cell": where.cell, "cellRegion": _region(where.span)}
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [location],
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    # A fix in a notebook edits the cell's text, not the file's JSON: SARIF cannot say that.
    if finding.fixes and where.cell is None:
        result["fixes"] = [_fix(f) for f in finding.fixes]
    return result


def render(report: Report) -> str:
    descriptors = [_descriptor(code) for code in CODES.values()]
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
                "results": [_result(f, index, report) for f in report.findings],
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
