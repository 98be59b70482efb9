"""JAX114: `save_anything_except_these_names` ignores its names, reported only where it is given one."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.rules.base import saved_residuals_of_f
from tests.rules.site_rules import anchored_text, findings

# Follows the policy builder of haliax's `ScanCheckpointPolicy` (a scan's checkpoint spec turned
# into a policy): lists of names to save and to recompute, filled from the spec, then a branch
# per case; the names to recompute go to `save_anything_except_these_names` in the branch where
# that list is non-empty, and again in branches taken only when it is empty ("save everything").
BUILDER = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

cp = jax.checkpoint_policies


class ScanPolicy:
    def __init__(self, save_carries, save_inputs, save_block_internals):
        self.save_carries = save_carries
        self.save_inputs = save_inputs
        self.save_block_internals = save_block_internals

    def as_policy(self, carry_name, input_name):
        to_save = []
        to_remat = []
        if self.save_carries:
            to_save.append(carry_name)
        else:
            to_remat.append(carry_name)
        if self.save_inputs:
            to_save.append(input_name)
        else:
            to_remat.append(input_name)

        if len(to_remat) > 0:
            if self.save_block_internals is True:
                p1 = cp.save_anything_except_these_names(*to_remat)
                if len(to_save) > 0:
                    return cp.save_from_both_policies(p1, cp.save_only_these_names(*to_save))
                return p1
            return cp.save_only_these_names(*to_save)
        elif len(to_save) > 0:
            p1 = cp.save_only_these_names(*to_save)
            if self.save_block_internals is True:
                p2 = cp.save_anything_except_these_names(*to_remat)
                return cp.save_from_both_policies(p1, p2)
            return p1
        elif self.save_block_internals is True:
            return cp.save_anything_except_these_names(*to_remat)
        return None


def block(carry, x):
    carry = checkpoint_name(carry, "carry")
    x = checkpoint_name(x, "input")
    h = jnp.sin(carry * x)
    return jnp.sin(h)


def make_f(policy):
    return lambda x: jax.checkpoint(block, policy=policy)(x, jnp.cos(x))
"""


def test_the_builder_is_reported_only_in_the_branch_where_its_list_holds_names(tmp_path):
    found = findings(BUILDER, tmp_path, "JAX114")
    assert [anchored_text(BUILDER, f) for f in found] == ["cp.save_anything_except_these_names(*to_remat)"]
    [line] = [f.span.start.line for f in found]
    assert textwrap.dedent(BUILDER).splitlines()[line - 1].strip() == "if self.save_block_internals is True:"


@pytest.mark.parametrize(
    "spec, excluded",
    [
        # The reported branch: the names to recompute are saved all the same.
        ("ScanPolicy(save_carries=False, save_inputs=False, save_block_internals=True)", ["carry", "input"]),
        # A branch taken with nothing to recompute: everything saved, as meant.
        ("ScanPolicy(save_carries=True, save_inputs=True, save_block_internals=True)", []),
    ],
)
def test_under_jax_both_branches_save_everything_which_only_the_empty_one_means(spec, excluded):
    namespace: dict = {"__name__": "snippet"}
    exec(compile(textwrap.dedent(BUILDER), "snippet.py", "exec"), namespace)
    built = eval(spec, namespace).as_policy("carry", "input")
    printed = saved_residuals_of_f(dict(namespace, f=namespace["make_f"](built)))
    everything = namespace["make_f"](namespace["cp"].everything_saveable)
    assert saved_residuals_of_f(dict(namespace, f=everything)) == printed
    for name in excluded:
        assert f"named '{name}'" in printed


@pytest.mark.parametrize(
    "body, reported",
    [
        ("names = ['big']\n    return cp.save_anything_except_these_names(*names)", True),
        ("return cp.save_anything_except_these_names(*names, 'big')", True),
        ("return cp.save_anything_except_these_names('big', *names)", True),
        ("if names:\n        return cp.save_anything_except_these_names(*names)\n    return None", True),
        ("if not names:\n        return None\n    return cp.save_anything_except_these_names(*names)", True),
        ("assert len(names) >= 1\n    return cp.save_anything_except_these_names(*names)", True),
        (
            "if len(names) == 0 or other:\n        return None\n    return cp.save_anything_except_these_names(*names)",
            True,
        ),
        ("return cp.save_anything_except_these_names(*names)", False),
        ("return cp.save_anything_except_these_names()", False),
        ("return cp.save_anything_except_these_names(*[])", False),
        (
            "if len(names) < 2:\n        return cp.save_anything_except_these_names(*names)\n    return None",
            False,
        ),
        (
            "if names or other:\n        return cp.save_anything_except_these_names(*names)\n    return None",
            False,
        ),
        ("if not names:\n        return cp.save_anything_except_these_names(*names)\n    return None", False),
    ],
)
def test_a_starred_list_is_reported_only_when_known_to_hold_a_name(body, reported, tmp_path):
    code = f"""
import jax

cp = jax.checkpoint_policies


def build(names, other):
    {body}
"""
    assert bool(findings(code, tmp_path, "JAX114")) is reported
