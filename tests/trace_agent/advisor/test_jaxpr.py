"""Recompute FLOPs against counts made by hand."""

from __future__ import annotations

import pytest

from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

PATH = ADVISOR_FIXTURES / "matmul_stack.py"
B, D, L = 16, 64, 5
MATMUL = 2 * B * D * D


def _flops(service, needle, example, policies):
    advice = advise(
        service, PATH, line_of(PATH, needle), example=example, policies=policies, root=ADVISOR_FIXTURES
    )
    assert advice.ok, advice.message
    return {p.policy.removeprefix("jax.checkpoint_policies."): p.recompute_flops for p in advice.policies}


def test_a_stack_of_matmuls(service):
    flops = _flops(
        service,
        "block = jax.checkpoint(",
        "matmul_stack.py:example",
        ["nothing_saveable", "dots_saveable", "everything_saveable"],
    )
    assert flops == {"nothing_saveable": L * MATMUL, "dots_saveable": 0, "everything_saveable": 0}


def test_a_scanned_stack_counts_every_iteration(service):
    flops = _flops(
        service,
        "lax.scan(jax.checkpoint(",
        "matmul_stack.py:scanned_example",
        ["nothing_saveable", "dots_saveable"],
    )
    assert flops == {"nothing_saveable": L * MATMUL, "dots_saveable": 0}


def test_a_convolution(service):
    flops = _flops(
        service,
        "conv_block = jax.checkpoint(",
        "matmul_stack.py:conv_example",
        ["nothing_saveable", "everything_saveable"],
    )
    # out 2x8x8x4, each output sums 3x3x3 products: 2 FLOPs per product
    assert flops == {"nothing_saveable": 2 * (2 * 8 * 8 * 4) * (3 * 3 * 3), "everything_saveable": 0}


def test_a_70b_shaped_layer_is_advised_without_allocating_it(service, tmp_path):
    """Residuals of 7 GiB are advised in a child limited to writing 2 GiB: the example
    (its jax.random.key included) and every candidate are traced, never run."""
    path = tmp_path / "big.py"
    path.write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def mlp(x, w_up, w_down):\n"
        "    return jnp.sum(jax.nn.silu(x @ w_up) @ w_down)\n\n\n"
        "block = jax.checkpoint(mlp, policy=jax.checkpoint_policies.everything_saveable)\n\n\n"
        "def example():\n"
        "    key = jax.random.key(0)\n"
        "    x = jax.ShapeDtypeStruct((8, 4096, 8192), jnp.bfloat16)\n"
        "    w_up = jax.eval_shape(lambda k: jax.random.normal(k, (8192, 28672), jnp.bfloat16), key)\n"
        "    return x, w_up, jax.ShapeDtypeStruct((28672, 8192), jnp.bfloat16)\n"
    )
    advice = advise(
        service,
        path,
        line_of(path),
        example="big.py:example",
        root=tmp_path,
        options=TraceOptions(timeout=120, memory_mb=2048),
    )
    assert advice.ok, advice.message
    everything = next(p for p in advice.policies if p.policy.endswith("everything_saveable"))
    assert everything.device_bytes > 7 * 2**30
    nothing = next(p for p in advice.policies if p.policy.endswith("nothing_saveable"))
    assert nothing.recompute_flops == 2 * 8 * 4096 * 8192 * 28672  # the up projection, again
