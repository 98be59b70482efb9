"""JAX106: a ready-made policy called with no arguments, anywhere in the module."""

from __future__ import annotations

import pytest

from jax_lsp.core import Severity
from jax_lsp.core.jax_api import READY_MADE_POLICIES
from tests.rules.site_rules import anchored_text, findings, fixed, grad_of_f


@pytest.mark.parametrize("member", sorted(READY_MADE_POLICIES))
def test_every_ready_made_policy_called_is_found_and_the_fix_runs(member, tmp_path):
    code = f"""
    import jax
    import jax.numpy as jnp

    f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.{member}())
    """
    [finding] = findings(code, tmp_path, "JAX106")
    assert anchored_text(code, finding) == f"jax.checkpoint_policies.{member}()"
    expected = Severity.WARNING if member == "nothing_saveable" else Severity.ERROR
    assert finding.severity is expected
    assert finding.fixes[0].safe
    grad_of_f(fixed(code, [finding]))
    if member == "nothing_saveable":
        grad_of_f(code)  # works, by accident
    else:
        with pytest.raises(TypeError):
            grad_of_f(code)


def test_aliases_and_off_site_calls(tmp_path):
    code = """
    import jax
    from jax.ad_checkpoint import checkpoint_policies as policies

    ds = jax.checkpoint_policies.dots_saveable
    a = ds()
    b = {"policy": policies.everything_saveable()}


    def block(policy=policies.checkpoint_dots_with_no_batch_dims()):
        return policy
    """
    found = findings(code, tmp_path, "JAX106")
    assert [anchored_text(code, f) for f in found] == [
        "ds()",
        "policies.everything_saveable()",
        "policies.checkpoint_dots_with_no_batch_dims()",
    ]
    assert "ds = jax.checkpoint_policies.dots_saveable\na = ds\n" in fixed(code, found)


def test_calls_with_arguments_local_namesakes_and_noqa_are_silent(tmp_path):
    code = """
    import jax


    def dots_saveable():
        return False


    def policy(prim, *avals, **params):
        return jax.checkpoint_policies.dots_saveable(prim, *avals, **params)


    a = dots_saveable()
    b = jax.checkpoint_policies.save_only_these_names()
    c = jax.checkpoint_policies.nothing_saveable()  # noqa: JAX106
    """
    assert findings(code, tmp_path, "JAX106") == []
