"""JAX111: a literal passed as the policy."""

from __future__ import annotations

import re

import pytest

from jax_lsp.core.jax_api import READY_MADE_POLICIES
from tests.rules.site_rules import anchored_text, findings, fixed, grad_of_f


@pytest.mark.parametrize(
    "literal, error",
    [
        ('"everything_saveable"', "'str' object is not callable"),
        ("True", "'bool' object is not callable"),
        ("1", "'int' object is not callable"),
        ("2.5", "'float' object is not callable"),
        ('b"dots"', "'bytes' object is not callable"),
        ('["dots_saveable"]', "unhashable type: 'list'"),
    ],
)
def test_each_truthy_literal_is_found_and_raises(literal, error, tmp_path):
    code = f"""
    import jax
    import jax.numpy as jnp

    f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy={literal})
    """
    [finding] = findings(code, tmp_path, "JAX111")
    assert anchored_text(code, finding) == literal
    with pytest.raises(TypeError, match=re.escape(error)):
        grad_of_f(code)


@pytest.mark.parametrize("literal", ["None", "False", "0", '""', "()", "{}"])
def test_falsy_literals_are_no_policy_to_jax_and_not_reported(literal, tmp_path):
    code = f"""
    import jax
    import jax.numpy as jnp

    f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy={literal})
    """
    assert findings(code, tmp_path, "JAX111") == []
    grad_of_f(code)  # runs


@pytest.mark.parametrize("member", sorted(READY_MADE_POLICIES))
def test_the_name_of_every_ready_made_policy_is_fixed_safely(member, tmp_path):
    code = f"""
    import jax
    import jax.numpy as jnp

    f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy="{member}")
    """
    found = findings(code, tmp_path, "JAX111")
    [fix] = found[0].fixes
    assert fix.safe
    assert f"policy=jax.checkpoint_policies.{member})" in fixed(code, found)
    grad_of_f(fixed(code, found))


def test_a_factory_name_says_what_to_call_it_with_and_has_no_fix(tmp_path):
    code = """
    import jax

    f = jax.checkpoint(lambda x: x, policy="save_only_these_names")
    """
    [finding] = findings(code, tmp_path, "JAX111")
    assert "call `jax.checkpoint_policies.save_only_these_names` with names" in finding.message
    assert finding.fixes == ()


def test_without_a_jax_import_there_is_no_fix(tmp_path):
    code = """
    import flax.linen as nn

    Block = nn.remat(nn.Dense, policy="dots_saveable")
    """
    [finding] = findings(code, tmp_path, "JAX111")
    assert "`jax.checkpoint_policies.dots_saveable`" in finding.message
    assert finding.fixes == ()


def test_each_branch_and_each_name_is_followed(tmp_path):
    code = """
    import jax

    DEFAULT = "dots_saveable"
    f = jax.checkpoint(lambda x: x, policy=DEFAULT if jax.devices() else "nothing_saveable")
    g = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.save_from_both_policies("dots_saveable", None))
    """
    found = findings(code, tmp_path, "JAX111")
    assert sorted(anchored_text(code, f) for f in found) == [
        '"dots_saveable"',
        '"dots_saveable"',
        '"nothing_saveable"',
    ]


def test_strings_that_are_not_the_policy_are_left_alone(tmp_path):
    code = """
    import jax
    from jax.ad_checkpoint import checkpoint_name

    NAME = "dots_saveable"


    def make(kind="dots_saveable"):
        return jax.checkpoint(lambda x: checkpoint_name(x, "inner"), policy=getattr(jax.checkpoint_policies, kind))


    f = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.save_only_these_names("inner"))
    g = jax.checkpoint(lambda x: x, policy=getattr(jax.checkpoint_policies, NAME))
    """
    assert findings(code, tmp_path, "JAX111") == []


def test_a_literal_from_another_module_is_reported_at_the_site(tmp_path):
    from jax_lsp.engine import Workspace

    (tmp_path / "config.py").write_text('REMAT_POLICY = "dots_saveable"\n')
    (tmp_path / "model.py").write_text(
        "import jax\nimport config\n\nf = jax.checkpoint(lambda x: x, policy=config.REMAT_POLICY)\n"
    )
    [finding] = Workspace([tmp_path]).check_file(tmp_path / "model.py")
    assert (finding.code, finding.path, finding.span.start.line) == ("JAX111", str(tmp_path / "model.py"), 3)
    assert finding.fixes == ()
