"""The compiled step's cost read from its optimized HLO (`step_cost.py`): every loop counted by
its trip count where the HLO states it (XLA's own cost_analysis() counts a body once), said so
where it does not, and on a TPU target the bytes an offloading policy moves to the host."""

from __future__ import annotations

import pytest

from jax_lsp.trace.advisor.step_time import estimate_json, read_step_cost
from jax_lsp.trace.compile_target import parse_target
from tests.agent import advise_fixture

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = jax.numpy

from jax_lsp.trace_agent.advisor.step_cost import cost_of, step_cost  # noqa: E402

LAYERS, ROWS, WIDTH = 8, 64, 128
MATMUL = 2 * ROWS * WIDTH * WIDTH  # one layer's product


def _stack(ws, x):
    def layer(h, w):
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(layer, x, ws)
    return jnp.sum(h**2)


def _compiled(fn, *args):
    return jax.jit(fn).lower(*args).compile()


def test_a_scans_body_is_counted_once_per_trip_where_xla_counts_it_once():
    ws = jnp.ones((LAYERS, WIDTH, WIDTH), jnp.float32)
    x = jnp.ones((ROWS, WIDTH), jnp.float32)
    compiled = _compiled(jax.grad(_stack, argnums=(0, 1)), ws, x)
    cost = cost_of(compiled)
    assert cost is not None
    # forward h @ w, backward g @ w.T and h.T @ g: three products a layer, every layer
    assert cost["flops"] == 3 * LAYERS * MATMUL
    assert LAYERS in cost["loop_trips"] and cost["uncounted_loops"] == 0
    # XLA's figure: the loops' bodies once
    assert cost["xla"]["flops"] < cost["flops"] / 2
    assert cost["once"]["flops"] < cost["flops"] / 2


def test_a_loop_whose_count_is_not_static_is_counted_once_and_said_so():
    def loop(w, x, n):
        return jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, jnp.tanh(c[1] @ w)), (0, x))[1]

    w, x = jnp.ones((WIDTH, WIDTH)), jnp.ones((ROWS, WIDTH))
    cost = step_cost(_compiled(loop, w, x, 5).as_text())
    assert cost["loop_trips"] == [None] and cost["uncounted_loops"] == 1
    assert cost["flops"] == MATMUL


def test_a_fori_loop_with_static_bounds_is_counted_by_them():
    def loop(w, x):
        return jax.lax.fori_loop(3, 10, lambda i, h: jnp.tanh(h @ w), x)

    cost = step_cost(_compiled(loop, jnp.ones((WIDTH, WIDTH)), jnp.ones((ROWS, WIDTH))).as_text())
    assert cost["loop_trips"] == [7] and cost["flops"] == 7 * MATMUL


def test_for_a_tpu_the_offloaded_residuals_go_to_the_host_and_back(service, libtpu_python):
    """peak_stack (24 scanned layers) compiled for v5e-1: the products of every layer counted,
    and an offloading policy's host bytes twice what XLA keeps on the host (out and back)."""
    policies = ["dots_saveable", "offload_dot_with_no_batch_dims('device', 'pinned_host')"]
    advice = advise_fixture(
        service,
        "peak_stack",
        *policies,
        compile=True,
        target=parse_target("v5e-1"),
        interpreter=libtpu_python,
    )
    assert advice.ok, advice.message
    kept, offloaded = advice.policies
    per_layer = 2 * (2 * 256 * 256 * 1024)  # h @ w_in and a @ w_out: B x D x F each
    for policy in (kept, offloaded):
        cost = policy.compiled.cost
        assert cost is not None and cost.loop_trips == (24, 24) and cost.uncounted_loops == 0
        assert cost.flops == 3 * 24 * per_layer  # forward, and twice as much backward
        assert cost.xla_flops is not None and cost.xla_flops < cost.flops / 10
    assert kept.compiled.cost.host_bytes == 0
    assert offloaded.compiled.host_temp_bytes
    assert offloaded.compiled.cost.host_bytes == 2 * offloaded.compiled.host_temp_bytes
    assert read_step_cost(offloaded.compiled.cost.to_json()) == offloaded.compiled.cost
    # from a machine without a TPU, each candidate's step predicted for the target's chip
    for policy in (kept, offloaded):
        predicted = estimate_json(advice.target, policy)
        assert predicted["step_estimate_s"] > 0 and predicted["step_estimate"]["chip"] == "v5e"
    assert estimate_json(advice.target, offloaded)["step_estimate"]["host_s"] > 0


ASYNC_COPY = """HloModule step

ENTRY %main (p0: bf16[1024,1024], p1: bf16[1024,1024]) -> bf16[1024,1024] {
  %p0 = bf16[1024,1024]{1,0:T(8,128)(2,1)} parameter(0)
  %p1 = bf16[1024,1024]{1,0:T(8,128)(2,1)} parameter(1)
  %copy-start = (bf16[1024,1024]{1,0:T(8,128)(2,1)S(1)}, bf16[1024,1024]{1,0:T(8,128)(2,1)}, u32[]) copy-start(%p1)
  %add = bf16[1024,1024]{1,0:T(8,128)(2,1)} add(%p0, %p0)
  %copy-done = bf16[1024,1024]{1,0:T(8,128)(2,1)S(1)} copy-done(%copy-start)
  ROOT %multiply = bf16[1024,1024]{1,0:T(8,128)(2,1)} multiply(%add, %copy-done)
}
"""


def test_an_asynchronous_copy_is_counted_apart_from_the_operations_in_order():
    """XLA:TPU's ``copy-start`` (a prefetch into the chip's fast memory) runs beside the
    computation: its bytes are in the totals and in ``async_*``, not in the buckets."""
    cost = step_cost(ASYNC_COPY)
    array = 1024 * 1024 * 2
    # the copy: its destination in the fast memory (space 1), written and read
    assert cost["async_on_chip_bytes"] == 2 * array and cost["async_bytes"] == 0
    assert cost["bytes"] == 3 * array + 2 * array  # add: two reads, a write; multiply: one, one
    assert cost["on_chip_bytes"] == array + cost["async_on_chip_bytes"]  # multiply reads the copy
    assert sum(b[3] for b in cost["buckets"]) == array
    assert sum(b[2] for b in cost["buckets"]) == cost["bytes"]
    assert sum(b[4] for b in cost["buckets"]) == cost["operations"] - 1 == 2
    assert read_step_cost(cost).async_on_chip_bytes == 2 * array  # type: ignore[union-attr]
