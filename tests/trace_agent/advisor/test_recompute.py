"""The recompute column against JAX's own backward pass: for every candidate, the `dot_general`
FLOPs of `jax.vjp`'s backward jaxpr beyond those it has where the policy saves everything
(a scan's body counted once per iteration), worked out here in the test's own JAX."""

from __future__ import annotations

import importlib.util

import pytest

from jax_lsp.trace.advisor.request import advise
from tests.agent import ADVISOR_FIXTURES, line_of, skip_unless_agent_runs_this_jax

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")
from tests.recompute_reference import backward_flops  # noqa: E402 (after the skip)

PATH = ADVISOR_FIXTURES / "between_matmuls.py"
POLICIES = ["nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable", "everything_saveable"]


def _fixture():
    spec = importlib.util.spec_from_file_location("between_matmuls_reference", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jax_recompute(make, args) -> dict[str, int]:
    """``{policy: FLOPs}``: ``make(policy)``'s backward pass beyond `everything_saveable`'s."""
    policies = jax.checkpoint_policies
    flops = {name: backward_flops(make(getattr(policies, name)), args) for name in POLICIES}
    return {name: value - flops["everything_saveable"] for name, value in flops.items()}


def _advised(service, needle, example) -> dict[str, int | None]:
    advice = advise(
        service, PATH, line_of(PATH, needle), example=example, policies=POLICIES, root=ADVISOR_FIXTURES
    )
    assert advice.ok, advice.message
    return {
        p.policy.removeprefix("jax.checkpoint_policies."): p.recompute_flops
        for p in advice.policies
        if p.policy.removeprefix("jax.checkpoint_policies.") in POLICIES
    }


def _concrete(shapes):
    return [jax.numpy.zeros(s.shape, s.dtype) for s in shapes]


@pytest.mark.parametrize(
    ("needle", "function"),
    [("masked_block =", "masked"), ("norm_block =", "layer_norm"), ("looped_block =", "looped")],
)
def test_a_checkpoint_with_work_between_its_matmuls(service, needle, function):
    skip_unless_agent_runs_this_jax()
    module = _fixture()
    expected = _jax_recompute(
        lambda policy: jax.checkpoint(getattr(module, function), policy=policy), _concrete(module.example())
    )
    assert _advised(service, needle, "between_matmuls.py:example") == expected
    assert expected["nothing_saveable"] > 0


def test_the_issues_six_lines(service):
    """Two matmuls of x f32[32,64] by w f32[64,64] with a masked `where` or a layer norm between
    them: under `nothing_saveable` JAX computes both again, 2 x 262,144 FLOPs."""
    for needle in ("masked_block =", "norm_block ="):
        assert _advised(service, needle, "between_matmuls.py:example")["nothing_saveable"] == 524_288


@pytest.mark.parametrize(
    ("needle", "example", "make"),
    [
        ("jax.checkpoint(layer, policy=policy)", "scanned_example", "scanned_with"),
        ("jax.checkpoint(masked_layer, policy=policy)", "loop_example", "loop_with"),
    ],
)
def test_a_checkpoint_in_a_scan_or_a_loop_counts_every_iteration(service, needle, example, make):
    skip_unless_agent_runs_this_jax()
    module = _fixture()
    args = getattr(module, example)()["args"]
    expected = _jax_recompute(getattr(module, make), _concrete(args))
    assert _advised(service, needle, f"between_matmuls.py:{example}") == expected
    assert expected["nothing_saveable"] == module.L * 2 * (2 * module.B * module.D * module.D)
