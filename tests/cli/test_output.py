"""The renderers, on hand-built findings: exact fields, 1-based character columns, escaping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jax_lsp.cli.output import FORMATS, Report, render
from jax_lsp.core.codes import CODES
from jax_lsp.core.findings import Edit, Finding, Fix, Severity, Span
from jax_lsp.rules import ALL_RULES

LINE = 'x = "中文é😀"; y = prim == "dot"\n'
START = LINE.index("prim")  # 15 code points in, more in UTF-8 bytes and UTF-16 units


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Report:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(LINE, encoding="utf-8")
    span = Span.of(0, START, 0, START + len('prim == "dot"'))
    fix = Fix(
        "Compare `prim.name`",
        True,
        (Edit(str(tmp_path / "m.py"), Span.of(0, START, 0, START + 4), "prim.name"),),
    )
    warning = Finding(
        str(tmp_path / "m.py"), "JAX104", Severity.WARNING, "never equal, %s: 100%,\nok", span, (fix,)
    )
    error = Finding(str(tmp_path / "m.py"), "JAX101", Severity.ERROR, "returns None", Span.of(0, 0, 0, 1))
    return Report(findings=[error, warning], source_lines=lambda p: Path(p).read_text().splitlines())


def test_json_has_exactly_the_documented_fields(report: Report) -> None:
    data = json.loads(render("json", report))
    assert [sorted(d) for d in data] == [
        sorted(
            [
                "path",
                "cell",
                "line",
                "column",
                "end_line",
                "end_column",
                "code",
                "severity",
                "message",
                "fixes",
            ]
        )
    ] * 2
    warning = data[1]
    assert warning == {
        "path": "m.py",
        "cell": None,
        "line": 1,
        "column": START + 1,
        "end_line": 1,
        "end_column": START + 14,
        "code": "JAX104",
        "severity": "warning",
        "message": "never equal, %s: 100%,\nok",
        "fixes": [
            {
                "title": "Compare `prim.name`",
                "safe": True,
                "edits": [
                    {
                        "path": "m.py",
                        "cell": None,
                        "line": 1,
                        "column": START + 1,
                        "end_line": 1,
                        "end_column": START + 5,
                        "new_text": "prim.name",
                    }
                ],
            }
        ],
    }
    assert data[0]["fixes"] == [] and data[0]["severity"] == "error"


def test_json_of_nothing_is_an_empty_list() -> None:
    assert json.loads(render("json", Report(findings=[]))) == []


def test_concise_is_one_line_per_finding(report: Report) -> None:
    lines = render("concise", report).splitlines()
    assert lines[:2] == [
        "m.py:1:1: JAX101 returns None",
        f"m.py:1:{START + 1}: JAX104 never equal, %s: 100%,",
    ]
    assert "Found 1 error and 1 warning." in lines


def test_full_puts_the_caret_under_the_range_counting_wide_characters(report: Report) -> None:
    text = render("full", report)
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("1 | "))  # the JAX104 snippet
    source, carets = lines[last], lines[last + 1]
    # 中, 文 and 😀 take two terminal cells each: the caret moves 3 cells right of the code-point column.
    assert carets.index("^") - source.index("x") == START + 3
    assert carets.count("^") == len('prim == "dot"')
    assert f"m.py:1:{START + 1}: JAX104 [*] never equal" in text
    assert "= help: Compare `prim.name`" in text
    assert text.endswith("Found 1 error and 1 warning.\n[*] 1 fixable with the `--fix` option.\n")


def test_full_counts_hidden_unsafe_fixes() -> None:
    unsafe = Fix("Wrap in bool()", False, ())
    finding = Finding("m.py", "JAX103", Severity.ERROR, "numpy bool", Span.of(0, 0, 0, 1), (unsafe,))
    text = render("full", Report(findings=[finding]))
    assert "JAX103 numpy bool" in text  # no [*]: --fix alone would not apply it
    assert "(unsafe fix)" in text
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in text
    assert "JAX103 [*]" in render("full", Report(findings=[finding], unsafe_fixes=True))


def test_full_reports_fixes_and_a_clean_result() -> None:
    assert (
        render("full", Report(findings=[], fixed=3, fixed_files=2))
        == "Fixed 3 errors in 2 files.\nAll checks passed!\n"
    )


def test_github_escapes_properties_and_data(report: Report) -> None:
    lines = render("github", report).splitlines()
    assert (
        lines[0]
        == "::error file=m.py,line=1,col=1,endLine=1,endColumn=2,title=jax-lsp (JAX101)::returns None"
    )
    assert lines[1] == (
        f"::warning file=m.py,line=1,col={START + 1},endLine=1,endColumn={START + 14},"
        "title=jax-lsp (JAX104)::never equal, %25s: 100%25,%0Aok"
    )


def test_sarif_has_rule_metadata_and_code_point_columns(report: Report) -> None:
    log = json.loads(render("sarif", report))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    rules = run["tool"]["driver"]["rules"]
    # Every code of the registry: the rules, and the file problems and JAX190 they may report.
    assert [r["id"] for r in rules] == list(CODES)
    assert {r.code for r in ALL_RULES} < set(CODES) and {"JAX001", "JAX190"} < set(CODES)
    jax190 = rules[[r["id"] for r in rules].index("JAX190")]
    assert jax190["helpUri"].endswith("JAX190.md") and jax190["defaultConfiguration"] == {"level": "error"}
    jax101 = rules[[r["id"] for r in rules].index("JAX101")]
    assert "## What it does" in jax101["help"]["markdown"] and jax101["helpUri"].endswith("JAX101.md")
    first, second = run["results"]
    assert rules[first["ruleIndex"]]["id"] == "JAX101" and first["level"] == "error"
    assert second["level"] == "warning"
    location = second["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "m.py"
    assert location["region"] == {
        "startLine": 1,
        "startColumn": START + 1,
        "endLine": 1,
        "endColumn": START + 14,
    }
    replacement = second["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "prim.name"


@pytest.mark.parametrize("output_format", FORMATS)
def test_every_format_renders_an_empty_report(output_format: str) -> None:
    text = render(output_format, Report(findings=[]))
    if output_format in ("json", "sarif"):
        json.loads(text)
    else:
        assert text in ("", "All checks passed!\n")
