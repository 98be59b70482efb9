"""Inside a loop's body the peak estimate holds what XLA holds of an elementwise chain: the value
a matmul (or anything but an elementwise step or a reduction) reads, and an expensive step whose
readers end in two held values; the other steps XLA computes inside their readers' fusions. On
haliax's scanned stack (tests/fixtures/advisor/gelu_stack.py in small) counting each step put the
estimate 30% to 90% over XLA's temporaries (issue 47)."""

from __future__ import annotations

import pytest

from jax_lsp.trace.advisor.fused import SMALLEST, WITHIN, doubtful
from jax_lsp.trace.options import TraceOptions
from tests.agent import advise_fixture

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")
jnp = jax.numpy

from jax_lsp.trace_agent.advisor.peak import estimate_peak  # noqa: E402

T, D, M, L = 256, 64, 512, 4
ACTIVATION = T * M * 4  # one layer's float32 MLP activation
ARGS = [
    jax.ShapeDtypeStruct((T, D), jnp.float32),
    jax.ShapeDtypeStruct((L, D, M), jnp.float32),
    jax.ShapeDtypeStruct((L, M, D), jnp.float32),
]


def _scanned(block):
    def stack(h, ups, downs):
        h, _ = jax.lax.scan(lambda h, layer: (block(h, *layer), None), h, (ups, downs))
        return h

    return stack


def test_a_loop_bodys_elementwise_chain_between_matmuls_holds_the_first_matmul_and_its_last_step():
    # GELU's steps (cube, scale, tanh, add, halve, multiply) fuse into the step the second
    # matmul reads: held, the first matmul's output and that step, not the six between them
    gelu = _scanned(lambda h, up, down: h + jax.nn.gelu(h @ up, approximate=True) @ down)
    assert estimate_peak(gelu, ARGS) == 2 * ACTIVATION


def test_an_expensive_step_read_on_the_way_to_two_held_values_is_held():
    # t feeds both matmuls' operands: XLA copies a cheap t (a square) into each operand's fusion,
    # reading z (held for the second operand anyway), but computes an expensive one (tanh) once
    # and holds it
    def block(step):
        def layer(h, up, down):
            z = h @ up
            t = step(z)
            return h + (t * 2.0) @ down + (t + z) @ down

        return _scanned(layer)

    out = T * D * 4  # the first product, held while the second operand is made
    assert estimate_peak(block(jnp.square), ARGS) == 2 * ACTIVATION + out  # z, an operand
    assert estimate_peak(block(jnp.tanh), ARGS) == 3 * ACTIVATION + out  # z, tanh, an operand


@pytest.fixture(scope="module")
def compiled_gelu(service):
    return advise_fixture(
        service,
        "gelu_stack",
        "dots_saveable",
        "everything_saveable",
        compile=True,
        options=TraceOptions(timeout=300),
    )


def test_haliaxs_scanned_stack_in_small_is_estimated_within_the_target(compiled_gelu):
    assert compiled_gelu.ok, compiled_gelu.message
    entries = [p for p in compiled_gelu.policies if p.error is None]
    assert len(entries) == 3
    for entry in entries:
        assert entry.compiled.temp_bytes >= SMALLEST
        assert abs(entry.estimate_error) <= WITHIN, (entry.policy, entry.peak_bytes, entry.compiled)
    # and ordered as XLA orders them (their compiled figures differ by far more than a tie)
    by_estimate = sorted(entries, key=lambda p: p.peak_bytes)
    assert by_estimate == sorted(entries, key=lambda p: p.compiled.temp_bytes)
    assert doubtful(compiled_gelu) == []
