"""Statements that only a newer Python parses are skipped, not syntax errors; the rest is analysed."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jax_lsp.core import Settings
from jax_lsp.core.text.python_versions import SkippedStatement
from jax_lsp.core.text.source import ParseCache, parse_text
from jax_lsp.engine import Workspace
from tests.core.text.test_parse_cache_fuzz import cached_and_fresh_parses

POLICY = "import jax\n\ndef bad(prim, *a, **k):\n    return None\n\nf = jax.checkpoint(g, policy=bad)\n"
TYPO = "def broken(:\n    pass\n"
RUNNING = sys.version_info[:2]
NEXT_PYTHON = f"{RUNNING[0]}.{RUNNING[1] + 1}"


def _check(tmp_path: Path, text: str, requires_python: str | None = None, settings: Settings | None = None):
    if requires_python is not None:
        (tmp_path / "pyproject.toml").write_text(
            f'[project]\nname = "p"\nrequires-python = "{requires_python}"\n'
        )
    path = tmp_path / "m.py"
    path.write_text(text)
    ws = Workspace([tmp_path], settings)
    findings = [(f.code, f.span.start.line) for f in ws.check_file(path)]
    return findings, list(ws.pythons.skipped.get(str(path), ()))


def test_newer_syntax_is_skipped_and_the_rest_analysed(tmp_path: Path, newer_syntax) -> None:
    python, statement = newer_syntax
    findings, skipped = _check(tmp_path, statement + "\n" + POLICY)
    first_policy_line = statement.count("\n") + 1
    assert findings == [("JAX101", first_policy_line + 3)]
    assert [(s.line, s.python) for s in skipped] == [(0, python)]


def test_a_real_error_is_still_jax001_next_to_newer_syntax(tmp_path: Path, newer_syntax) -> None:
    _, statement = newer_syntax
    text = statement + "\n" + POLICY + TYPO
    findings, skipped = _check(tmp_path, text, requires_python=">=3.10")
    typo_line = text.count("\n") - 2
    assert findings == [("JAX101", statement.count("\n") + 4), ("JAX001", typo_line)]
    assert [s.line for s in skipped] == [0]


def test_a_project_for_a_newer_python_reports_no_syntax_error(tmp_path: Path) -> None:
    findings, skipped = _check(tmp_path, TYPO + POLICY, requires_python=f">={NEXT_PYTHON},<4")
    assert findings == [("JAX101", 5)]
    origin = f"requires-python '>={NEXT_PYTHON},<4' in {tmp_path / 'pyproject.toml'}"
    assert skipped == [SkippedStatement(0, (RUNNING[0], RUNNING[1] + 1), origin)]


def test_target_version_overrides_requires_python(tmp_path: Path) -> None:
    settings = Settings(target_version=RUNNING)
    findings, skipped = _check(tmp_path, TYPO + POLICY, requires_python=f">={NEXT_PYTHON}", settings=settings)
    assert findings == [("JAX001", 0), ("JAX101", 5)] and skipped == []


def test_a_statement_cut_in_two_leaves_the_whole_file_to_decide(tmp_path: Path, newer_syntax) -> None:
    # The `def` line inside the string looks like a new statement and cuts the first one in two.
    python, statement = newer_syntax
    text = 'x = """\ndef not_code(:\n"""\n' + statement + POLICY
    findings, skipped = _check(tmp_path, text)
    assert findings == [("JAX101", statement.count("\n") + 6)]
    assert [(s.line, s.python) for s in skipped] == [(3, python)]


TYPED = st.sampled_from(
    list("()[]{}:'\"\\#=,.xT ") + ["\n", "\n    ", '"""', "def ", "class ", "type ", 'f"{', "[T]"]
)
EDIT = st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.lists(TYPED, max_size=3).map("".join))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # "\\ " typed in a string
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(EDIT, min_size=1, max_size=6))
def test_cached_parse_equals_a_fresh_parse_with_newer_syntax(newer_syntax, edits) -> None:
    _, statement = newer_syntax
    text = POLICY + statement + 'x = f"{d["k"]}"\n' + POLICY.replace("bad", "worse")
    for cached, fresh in cached_and_fresh_parses(text, edits):
        assert ast.dump(cached.tree, include_attributes=True) == ast.dump(fresh.tree, include_attributes=True)
        assert (cached.problems, cached.skipped) == (fresh.problems, fresh.skipped)


def test_a_newer_statement_cut_in_two_is_skipped_whole(tmp_path: Path, newer_syntax) -> None:
    python, statement = newer_syntax
    head, colon, body = statement.partition(":\n")
    if not colon:
        pytest.skip("this statement has no body to cut")
    # The docstring's unindented line looks like a new statement and cuts this one in two.
    findings, skipped = _check(
        tmp_path, POLICY + head + colon + '    """Doc.\n\nExample: x\n"""\n' + body + "x = 1\n"
    )
    assert findings == [("JAX101", 3)]
    assert [(s.line, s.python) for s in skipped] == [(POLICY.count("\n"), python)]


def test_newer_syntax_inside_a_string_is_only_text(tmp_path: Path, newer_syntax) -> None:
    _, statement = newer_syntax
    text = 'EXAMPLE = """\n' + statement + '"""\n' + POLICY
    findings, skipped = _check(tmp_path, text)
    assert findings == [("JAX101", statement.count("\n") + 5)] and skipped == []
    fresh, cache = parse_text(text, "m.py"), ParseCache()
    for typed in (text.replace("EXAMPLE", "EXAMPL"), text):  # through the editor's cache too
        cached = parse_text(typed, "m.py", cache=cache)
    assert ast.dump(cached.tree) == ast.dump(fresh.tree) and cached.skipped == []
