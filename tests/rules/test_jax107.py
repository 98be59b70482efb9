"""JAX107: a policy factory passed as a policy without being called."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.core.jax_api import POLICY_FACTORIES
from tests.rules.site_rules import anchored_text, findings, fixed, grad_of_f


@pytest.mark.parametrize("member", sorted(POLICY_FACTORIES))
def test_every_factory_passed_uncalled_is_found_and_raises(member, tmp_path):
    code = f"""
    import jax
    import jax.numpy as jnp

    f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.{member})
    """
    [finding] = findings(code, tmp_path, "JAX107")
    assert anchored_text(code, finding) == f"jax.checkpoint_policies.{member}"
    assert POLICY_FACTORIES[member].takes in finding.message
    assert finding.fixes == ()
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        grad_of_f(code)


def test_factory_inside_save_from_both_and_through_partial(tmp_path):
    code = """
    import functools

    import jax

    cp = jax.checkpoint_policies
    both = cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names)


    @functools.partial(jax.checkpoint, policy=both)
    def f(x):
        return x
    """
    [finding] = findings(code, tmp_path, "JAX107")
    assert (finding.span.start.line + 1, anchored_text(code, finding)) == (7, "cp.save_only_these_names")


def test_called_factories_and_ready_made_policies_are_silent(tmp_path):
    code = """
    import jax

    cp = jax.checkpoint_policies
    f = jax.checkpoint(abs, policy=cp.save_only_these_names("a"))
    g = jax.checkpoint(abs, policy=cp.dots_saveable)
    h = jax.checkpoint(abs, policy=cp.save_from_both_policies(cp.dots_saveable, cp.nothing_saveable))
    """
    assert findings(code, tmp_path, "JAX107") == []


@pytest.mark.parametrize(
    "policies, use",
    [
        ("SAVE = jax.checkpoint_policies.save_any_names_but_these\n", "SAVE"),
        ("def make():\n    return jax.checkpoint_policies.save_any_names_but_these\n", "make()"),
    ],
)
def test_factory_named_in_another_module_is_reported_at_the_site(policies, use, tmp_path):
    (tmp_path / "policies.py").write_text("import jax\n\n" + policies)
    name = use.rstrip("()")
    code = f"""
    import jax
    from policies import {name}

    f = jax.checkpoint(abs, policy={use})
    """
    [finding] = findings(code, tmp_path, "JAX107", name="model.py")
    assert finding.path == str(tmp_path / "model.py")
    assert (finding.span.start.line + 1, anchored_text(code, finding)) == (5, use)
    assert findings((tmp_path / "policies.py").read_text(), tmp_path, "JAX107", name="policies.py") == []


NAMES_TAGGED = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def g(x):
    return jnp.sin(checkpoint_name(jnp.sin(x), "inner") @ checkpoint_name(x, "outer"))


f = jax.checkpoint(g, policy=jax.checkpoint_policies.MEMBER)
"""


@pytest.mark.parametrize(
    "member, call",
    [
        ("save_only_these_names", '("inner", "outer")'),
        ("save_any_names_but_these", '("inner", "outer")'),
        (
            "save_and_offload_only_these_names",
            '(names_which_can_be_saved=["inner", "outer"], names_which_can_be_offloaded=[], '
            'offload_src="device", offload_dst="pinned_host")',
        ),
    ],
)
def test_a_names_factory_is_called_with_the_names_in_reach_and_then_runs(member, call, tmp_path):
    code = NAMES_TAGGED.replace("MEMBER", member)
    [finding] = findings(code, tmp_path, "JAX107")
    [fix] = finding.fixes
    assert not fix.safe and fix.title.endswith('the names tagged in reach: "inner", "outer"')
    result = fixed(code, [finding])
    assert result == textwrap.dedent(code).replace(f"{member})", f"{member}{call})")
    assert findings(result, tmp_path, "JAX107") == []
    grad_of_f(result)  # no TypeError: the factory made the policy


def test_a_factory_of_policies_or_memories_gets_no_fix(tmp_path):
    for member in ("save_from_both_policies", "offload_dot_with_no_batch_dims"):
        [finding] = findings(NAMES_TAGGED.replace("MEMBER", member), tmp_path, "JAX107")
        assert finding.fixes == ()
