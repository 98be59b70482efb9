"""JAX110: save_from_both_policies over the policies that JAX's offloading factories make."""

from __future__ import annotations

import pytest

from tests.rules.site_rules import anchored_text, findings, grad_of_f

SAVE_AND_OFFLOAD = (
    'cp.save_and_offload_only_these_names(names_which_can_be_saved=["inner"], '
    'names_which_can_be_offloaded=[], offload_src="device", offload_dst="pinned_host")'
)
OFFLOAD_DOTS = 'cp.offload_dot_with_no_batch_dims("device", "pinned_host")'

HEADER = """
import functools

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

cp = jax.checkpoint_policies
"""
BODY = 'lambda x: jnp.sin(checkpoint_name(jnp.sin(x), "inner")) @ x'


@pytest.mark.parametrize(
    "setup, member, reported",
    [
        ("", SAVE_AND_OFFLOAD, SAVE_AND_OFFLOAD),
        ("", OFFLOAD_DOTS, OFFLOAD_DOTS),
        (f"OFFLOAD = {OFFLOAD_DOTS}\n", "OFFLOAD", OFFLOAD_DOTS),
        (
            'host = functools.partial(cp.offload_dot_with_no_batch_dims, "device")\n',
            'host("pinned_host")',
            'host("pinned_host")',
        ),
        (
            "",
            'functools.partial(cp.offload_dot_with_no_batch_dims, offload_src="device")(offload_dst="pinned_host")',
            'functools.partial(cp.offload_dot_with_no_batch_dims, offload_src="device")(offload_dst="pinned_host")',
        ),
        (f"def make():\n    return {SAVE_AND_OFFLOAD}\n", "make()", SAVE_AND_OFFLOAD),
    ],
    ids=["save_and_offload", "offload_dots", "name", "partial-name", "partial-inline", "factory"],
)
@pytest.mark.parametrize("second", [False, True], ids=["first", "second"])
def test_an_offloading_factory_policy_in_save_from_both_is_found_and_raises(
    setup, member, reported, second, tmp_path
):
    members = f"cp.dots_saveable, {member}" if second else f"{member}, cp.dots_saveable"
    code = f"{HEADER}{setup}\nf = jax.checkpoint({BODY}, policy=cp.save_from_both_policies({members}))\n"
    [finding] = findings(code, tmp_path, "JAX110")
    assert anchored_text(code, finding) == reported
    assert "save_from_both_policies" in finding.message and "ValueError" in finding.message
    with pytest.raises(ValueError, match="The return value of the policies should be a boolean"):
        grad_of_f(code)


def test_an_offloading_policy_from_another_module_is_reported_at_the_site(tmp_path):
    (tmp_path / "policies.py").write_text(f"{HEADER}\nOFFLOAD = {OFFLOAD_DOTS}\n")
    code = f"{HEADER}from policies import OFFLOAD\n\nf = jax.checkpoint({BODY}, policy=cp.save_from_both_policies(OFFLOAD, cp.dots_saveable))\n"
    [finding] = findings(code, tmp_path, "JAX110", name="model.py")
    assert finding.path == str(tmp_path / "model.py")
    assert anchored_text(code, finding) == "cp.save_from_both_policies(OFFLOAD, cp.dots_saveable)"
    assert "offload_dot_with_no_batch_dims(...)" in finding.message


@pytest.mark.parametrize(
    "members",
    [
        'cp.save_only_these_names("inner"), cp.dots_saveable',
        'cp.save_any_names_but_these("inner"), cp.save_anything_except_these_names("inner")',
        "cp.save_from_both_policies(cp.dots_saveable, cp.nothing_saveable), cp.everything_saveable",
    ],
)
def test_factories_whose_policies_return_bools_are_silent_and_run(members, tmp_path):
    code = f"{HEADER}\nf = jax.checkpoint({BODY}, policy=cp.save_from_both_policies({members}))\n"
    assert findings(code, tmp_path, "JAX110") == []
    grad_of_f(code)


def test_an_offloading_policy_alone_is_not_reported(tmp_path):
    code = f"{HEADER}\nf = jax.checkpoint({BODY}, policy={SAVE_AND_OFFLOAD})\n"
    assert findings(code, tmp_path, "JAX110") == []
