"""The registry of codes (jax_lsp.core.codes) and the rules agree, and every code has its page."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from jax_lsp.core.codes import CODES, UNPREDICTED, Family, family_of, lookup
from jax_lsp.rules import ALL_RULES, Rule
from tests.rules.test_generated import DOC_SECTIONS

ROOT = Path(__file__).resolve().parents[2]


def test_the_rules_are_the_rule_family_of_the_registry():
    assert [r.code for r in ALL_RULES] == [c.code for c in CODES.values() if c.family is Family.RULE]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_a_rule_takes_name_severity_and_summary_from_the_registry(rule):
    entry = CODES[rule.code]
    assert (rule.name, rule.severity, rule.summary) == (entry.name, entry.severity, entry.summary)
    assert rule.doc_url() == entry.doc_url


def test_a_rule_class_needs_a_rule_code_of_the_registry():
    with pytest.raises(TypeError, match="JAX190 is not a rule code"):
        type("Traced", (Rule,), {"code": UNPREDICTED})
    with pytest.raises(TypeError, match="JAX199 is not a rule code"):
        type("Unknown", (Rule,), {"code": "JAX199"})


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_a_doc_page_in_the_shape_of_the_rules(code):
    entry = CODES[code]
    page = ROOT / entry.doc_path
    assert page.is_file(), f"{entry.doc_path} is missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {code} ({entry.name})\n\n{entry.summary}. Severity: {entry.severity.value}.\n")
    for section in DOC_SECTIONS:
        assert section in text, f"{entry.doc_path} lacks {section}"
    assert entry.doc_url.endswith(f"/{entry.doc_path}")
    assert f"[{code}]({code}.md)" in (ROOT / "docs/rules/README.md").read_text(encoding="utf-8")


def test_the_families_are_told_by_the_registry_not_the_spelling():
    assert [family_of(c) for c in ("JAX001", "JAX002", "JAX101", "JAX112")] == [
        Family.FILE,
        Family.FILE,
        Family.RULE,
        Family.RULE,
    ]
    # JAX190 starts like a rule code, but is what a trace found.
    assert family_of(UNPREDICTED) is Family.TRACE
    assert family_of("JAX1") is None and lookup("jax101") is CODES["JAX101"]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_one_name_for_the_rule_everywhere(rule):
    """Module jax101_policy_returns_none = rule policy-returns-none = class PolicyReturnsNone =
    examples/jax101_policy_returns_none.py."""
    snake = f"{rule.code.lower()}_{rule.name.replace('-', '_')}"
    assert inspect.getmodule(type(rule)).__name__ == f"jax_lsp.rules.{snake}"
    assert type(rule).__name__ == "".join(word.capitalize() for word in rule.name.split("-"))
    assert (ROOT / "examples" / f"{snake}.py").is_file()


def test_the_readme_names_each_rule_and_what_the_trace_finds_as_the_registry_does():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[(JAX\d+)\]\(docs/rules/JAX\d+\.md\) \| ([a-z-]+) \|", readme, re.MULTILINE)
    traced = [(c.code, c.name) for c in CODES.values() if c.family is Family.TRACE]
    assert rows == [(rule.code, rule.name) for rule in ALL_RULES] + traced
    assert ("JAX191", "policy-name-without-effect") in traced
