"""Every rule's VALID/INVALID examples: statically (findings, fixed text) and under real JAX."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from jax_lsp.core import Settings, apply_edits
from jax_lsp.core.jax_facts import facts_for, installed_jax_version
from jax_lsp.engine import analyze_text
from jax_lsp.rules import ALL_RULES
from tests.jax_premises import missing_premise, not_installed
from tests.rules import example_runner

# The Python whose JAX proves the examples: this one, or JAX_LSP_TEST_INTERPRETER (.ci/jax_ends.sh).
EXAMPLE_PYTHON = os.environ.get("JAX_LSP_TEST_INTERPRETER")
EXAMPLE_FACTS = facts_for(installed_jax_version(EXAMPLE_PYTHON))

INVALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.INVALID)]
VALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.VALID)]


def _id(case) -> str:
    rule, index, _ = case
    return f"{rule.code}-{index}"


def _analyze(tmp_path, code: str, rule=None):
    settings = Settings(select=(rule.code,)) if rule else Settings()
    return analyze_text(code, str(tmp_path / "example.py"), settings)


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_invalid_example_is_found_where_stated(case, tmp_path):
    rule, _, example = case
    findings = _analyze(tmp_path, example.code, rule)
    assert sorted(f.span.start.line + 1 for f in findings if f.code == rule.code) == sorted(example.lines)


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_invalid_example_fix_gives_expected_text(case, tmp_path):
    rule, _, example = case
    findings = _analyze(tmp_path, example.code, rule)
    edits = [edit for f in findings for fix in f.fixes for edit in fix.edits]
    if example.fixed is None:
        assert not edits
        return
    fixed = apply_edits(example.code, edits)
    assert fixed == example.fixed
    ast.parse(fixed)
    assert not [f for f in _analyze(tmp_path, fixed) if f.code.startswith("JAX1")]


@pytest.mark.parametrize("case", VALID, ids=_id)
def test_valid_example_has_no_findings(case, tmp_path):
    _, _, example = case
    assert _analyze(tmp_path, example.code) == []


@pytest.fixture(scope="session")
def prove():
    """prove(code, check) -> {"error", "check"}: run the example under JAX (tests/rules/example_runner.py),
    in this process, or in JAX_LSP_TEST_INTERPRETER when set (CI: the oldest and the newest
    supported JAX, .ci/jax_ends.sh)."""
    if EXAMPLE_PYTHON is None:
        yield lambda code, check=None: example_runner.prove({"code": code}, check)
        return
    runner = subprocess.Popen(
        [EXAMPLE_PYTHON, str(Path(example_runner.__file__))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def remote(code, check=None):
        runner.stdin.write(json.dumps({"code": code, "check": check and _shipped(check)}) + "\n")
        runner.stdin.flush()
        answer = runner.stdout.readline()
        assert answer, f"the example runner in {EXAMPLE_PYTHON} exited"
        return json.loads(answer)

    yield remote
    runner.stdin.close()
    runner.wait(30)


def _shipped(check):
    """A `misbehaves` check as the runner rebuilds it: its source, the sources of the module-level
    functions it calls (`saved_residuals_of_f`...), and the modules their modules had bound."""
    function = getattr(check, "__func__", check)  # a staticmethod of the rule class
    todo, seen, sources, modules = [function], {function.__name__}, [], {}
    while todo:
        current = todo.pop()
        lines = textwrap.dedent(inspect.getsource(current)).splitlines()
        sources.append("\n".join(line for line in lines if not line.startswith("@")) + "\n")
        scope = current.__globals__
        for alias, value in scope.items():
            if isinstance(value, types.ModuleType) and not value.__name__.startswith("jax_lsp"):
                modules[alias] = value.__name__
        for name in current.__code__.co_names:
            if isinstance(scope.get(name), types.FunctionType) and name not in seen:
                seen.add(name)
                todo.append(scope[name])
    return {"source": "\n".join(reversed(sources)), "name": function.__name__, "modules": modules}


def _expect(rule, kind, example, text, request):
    """Skip an example that needs a package the interpreter lacks; mark one that stands on a fact
    its JAX lacks as an expected failure (tests/jax_premises.py)."""
    missing = not_installed(text, EXAMPLE_PYTHON)
    if missing:
        pytest.skip(f"{EXAMPLE_PYTHON or sys.executable} lacks {', '.join(missing)}")
    premise = missing_premise(rule.code, kind, example, text, EXAMPLE_FACTS)
    if premise:
        request.applymarker(pytest.mark.xfail(reason=premise, strict=True))


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_invalid_example_fails_under_jax(case, prove, request):
    rule, _, example = case
    assert example.error or example.misbehaves, "an INVALID example must say how JAX fails"
    _expect(rule, "INVALID", example, example.code, request)
    outcome = prove(example.code, None if example.error else example.misbehaves)
    if example.error:
        assert outcome["error"] and example.error in outcome["error"], outcome
    else:
        assert outcome == {"error": None, "check": "ok"}, outcome


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_fixed_example_runs_under_jax(case, prove, request):
    rule, _, example = case
    if example.fixed is None:
        pytest.skip("this example has no fix")
    _expect(rule, "fixed", example, example.fixed, request)
    outcome = prove(example.fixed, example.misbehaves)
    assert outcome["error"] is None, outcome
    if example.misbehaves:  # the fixed module no longer misbehaves: the check fails
        assert outcome["check"].startswith("AssertionError"), outcome


@pytest.mark.parametrize("case", VALID, ids=_id)
def test_valid_example_runs_under_jax(case, prove, request):
    rule, _, example = case
    _expect(rule, "VALID", example, example.code, request)
    assert prove(example.code)["error"] is None
