"""Every rule's VALID/INVALID examples: statically (findings, fixed text) and under real JAX."""

from __future__ import annotations

import ast

import pytest

from jax_lsp.core import Settings, apply_edits
from jax_lsp.engine import analyze_text
from jax_lsp.rules import ALL_RULES

INVALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.INVALID)]
VALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.VALID)]


# Flags an example may turn on for itself (JAX115's `jax.config.update("jax_remat3", True)`).
EXAMPLE_FLAGS = ("jax_remat3",)


@pytest.fixture(autouse=True)
def _jax_flags_restored():
    """Each example runs, and is judged, with the flags it sets; the next starts from JAX's own."""
    import jax

    saved = {name: getattr(jax.config, name) for name in EXAMPLE_FLAGS if hasattr(jax.config, name)}
    yield
    for name, value in saved.items():
        jax.config.update(name, value)


def _id(case) -> str:
    rule, index, _ = case
    return f"{rule.code}-{index}"


def _analyze(tmp_path, code: str, rule=None):
    settings = Settings(select=(rule.code,)) if rule else Settings()
    return analyze_text(code, str(tmp_path / "example.py"), settings)


def run_example(code: str):
    """Exec the example as a module and differentiate its `f`: where JAX calls the policy."""
    import jax
    import jax.numpy as jnp

    namespace: dict = {"__name__": "example"}
    exec(compile(code, "example.py", "exec"), namespace)
    jax.grad(lambda x: jnp.sum(namespace["f"](x)))(jnp.ones((4, 4)))
    return namespace


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


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_invalid_example_fails_under_jax(case):
    _, _, example = case
    assert example.error or example.misbehaves, "an INVALID example must say how JAX fails"
    if example.error:
        with pytest.raises(Exception) as raised:
            run_example(example.code)
        assert example.error in f"{raised.type.__name__}: {raised.value}"
    else:
        example.misbehaves(run_example(example.code))


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_fixed_example_runs_under_jax(case):
    _, _, example = case
    if example.fixed is None:
        pytest.skip("this example has no fix")
    namespace = run_example(example.fixed)
    if example.misbehaves:
        with pytest.raises(AssertionError):
            example.misbehaves(namespace)


@pytest.mark.parametrize("case", VALID, ids=_id)
def test_valid_example_runs_under_jax(case):
    _, _, example = case
    run_example(example.code)
