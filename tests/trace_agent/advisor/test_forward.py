"""The forward jaxpr replayed under `vjp` keeps what the function itself keeps: each way a
function makes a scalar constant, compared with JAX's own `saved_residuals`, in this process."""

from __future__ import annotations

import collections

import pytest

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

from jax_lsp.trace_agent.advisor.candidates import Candidate  # noqa: E402 (after the skip)
from jax_lsp.trace_agent.advisor.driver import advise_one  # noqa: E402
from jax_lsp.trace_agent.advisor.forward import trace_forward  # noqa: E402
from jax_lsp.trace_agent.advisor.residuals import Frames  # noqa: E402
from jax_lsp.trace_agent.advisor.site import Marker  # noqa: E402
from tests.agent import jax_kind  # noqa: E402

jax_ad = pytest.importorskip("jax._src.interpreters.ad")

try:
    from jax.ad_checkpoint import saved_residuals  # type: ignore[attr-defined, unused-ignore]
except ImportError:
    from jax._src.ad_checkpoint import saved_residuals

MODULE_VECTOR = jnp.ones((8,), jnp.bfloat16)
POLICY = jax.checkpoint_policies.dots_with_no_batch_dims_saveable


def _block(x, w):
    h = x @ w
    return jnp.sin(h) * jnp.bfloat16(0.5) + h * 0.5


def _scanned(ws, x):
    def body(carry, w):
        return jax.checkpoint(_block, policy=POLICY)(carry, w), None

    return jnp.mean(jax.lax.scan(body, x, ws)[0].astype(jnp.float32) ** 2) * jnp.bfloat16(2.0)


# name -> (function, how many residuals JAX lists "from a literal")
FUNCTIONS = {
    "a Python scalar": (lambda x: jnp.sum(jnp.sin(x) * 0.5), 1),
    "an int scalar": (lambda x: jnp.sum(jnp.sin(x) * 2), 1),
    "jnp.bfloat16(0.5)": (lambda x: jnp.sum(jnp.sin(x) * jnp.bfloat16(0.5)), 1),
    "jnp.full((), 3.0)": (lambda x: jnp.sum(jnp.sin(x) * jnp.full((), 3.0, jnp.bfloat16)), 1),
    "a numpy scalar": (lambda x: jnp.sum(jnp.sin(x) * np.asarray(0.5, jnp.bfloat16)), 0),
    "a module's vector": (lambda x: jnp.sum(jnp.sin(x) * MODULE_VECTOR), 0),
    "jnp.mean's divisor": (lambda x: jnp.mean(jnp.sin(x) ** 2), 0),
    "an epsilon": (lambda x: jnp.sum(x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)), 0),
    "a checkpoint in a scan": (_scanned, 1),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_replay_keeps_the_constants_jax_keeps(name):
    fn, literals = FUNCTIONS[name]
    x = jax.ShapeDtypeStruct((4, 8), jnp.bfloat16)
    args = (jax.ShapeDtypeStruct((3, 8, 8), jnp.bfloat16), x) if fn is _scanned else (x,)
    expected = saved_residuals(fn, *args)
    assert sum(d == "from a literal" for _, d in expected) == literals
    entry = advise_one(
        Candidate("current", None, current=True),
        trace_forward(fn, list(args)),
        list(args),
        ("",) * len(args),
        Frames(None, []),
    )
    ours = collections.Counter((tuple(r["shape"]), r["dtype"], r["kind"]) for r in entry["residuals"])
    theirs = collections.Counter((tuple(a.shape), str(a.dtype), jax_kind(d)) for a, d in expected)
    assert ours == theirs


def _scaled_block(x, w, times):
    def body(x, w):
        return jnp.sin(x @ w) * times

    return jnp.sum(jax.checkpoint(body, policy=Marker(POLICY))(x, w))


def test_the_warm_jvp_leaves_the_candidates_no_jvp_of_the_body_to_trace():
    jvp_cache = getattr(getattr(jax_ad, "_jvp_jaxpr", None), "cache_info", None)
    if jvp_cache is None:
        pytest.skip("this JAX release caches the JVP of a jaxpr otherwise")
    # an integer leaf gets a float0 tangent, as under vjp
    leaves = [jax.ShapeDtypeStruct((4, 8), jnp.float32), jax.ShapeDtypeStruct((8, 8), jnp.float32)]
    leaves.append(jax.ShapeDtypeStruct((), jnp.int32))

    def entry(forward):
        return advise_one(
            Candidate("nothing", jax.checkpoint_policies.nothing_saveable),
            forward,
            leaves,
            ("",) * 3,
            Frames(None, []),
            2,
            lambda: True,
        )

    cold = entry(trace_forward(_scaled_block, leaves))
    forward = trace_forward(_scaled_block, leaves)
    forward.warm_jvp(leaves)
    misses = jvp_cache().misses
    assert entry(forward) == cold
    assert jvp_cache().misses == misses
