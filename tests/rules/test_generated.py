"""docs/rules/*.md and examples/*.py are generated from the rules: they must be current."""

from pathlib import Path

import pytest

from jax_lsp.rules import ALL_RULES
from jax_lsp.rules.generate import readme_with_rules_table, rule_files

# The sections of every code's doc page, in the shape of ruff's rule docs.
DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("relative, content", sorted(rule_files().items()))
def test_generated_file_is_current(relative, content):
    path = ROOT / relative
    assert path.is_file(), f"run `python -m jax_lsp.rules.generate` to create {relative}"
    assert path.read_text(encoding="utf-8") == content, (
        f"run `python -m jax_lsp.rules.generate`: {relative} is stale"
    )


def test_the_readmes_table_of_rules_is_the_registrys():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_with_rules_table(readme) == readme, (
        "run `python -m jax_lsp.rules.generate`: README.md is stale"
    )
    for rule in ALL_RULES:
        assert f"| [{rule.code}](docs/rules/{rule.code}.md) | {rule.name} |" in readme


def test_every_rule_has_docs_sections_and_examples():
    for rule in ALL_RULES:
        docs = rule.docs()
        for section in DOC_SECTIONS:
            assert section in docs, f"{rule.code} docs lack {section}"
        assert rule.VALID and rule.INVALID, rule.code


def test_rule_codes_are_the_published_table():
    assert [r.code for r in ALL_RULES] == sorted(r.code for r in ALL_RULES)
