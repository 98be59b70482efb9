"""A scanned stack of masked-attention + MLP blocks in bfloat16, at a TPU chip's scale: the site
and its example in one file (benchmarks/step_time/).

8 layers under one `lax.scan`, width 2048 (16 heads of 128), MLP 8192, one sequence of 2048
tokens, causal mask, the attention's output projection tagged `attention_out` with
`checkpoint_name`. The site is the `jax.checkpoint(..., policy=...)` of the scan's body.
"""

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

WIDTH, MLP, TOKENS, LAYERS, HEAD = 2048, 8192, 2048, 8, 128


def _norm(x):
    x32 = x.astype(jnp.float32)
    centred = x32 - jnp.mean(x32, axis=-1, keepdims=True)
    return (centred * jax.lax.rsqrt(jnp.mean(centred**2, axis=-1, keepdims=True) + 1e-6)).astype(x.dtype)


def block(x, w):
    tokens, width = x.shape
    q, k, v = jnp.split(_norm(x) @ w["qkv"], 3, axis=-1)
    q, k, v = (t.reshape(tokens, width // HEAD, HEAD) for t in (q, k, v))
    scores = jnp.einsum("thd,shd->hts", q, k).astype(jnp.float32) / HEAD**0.5
    causal = jnp.tril(jnp.ones((tokens, tokens), bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1).astype(x.dtype)
    attended = jnp.einsum("hts,shd->thd", weights, v).reshape(tokens, width)
    x = x + checkpoint_name(attended @ w["out"], "attention_out")
    return x + jax.nn.gelu(_norm(x) @ w["up"]) @ w["down"]


def stack(weights, x):
    def layer(h, w):
        return jax.checkpoint(block, policy=jax.checkpoint_policies.nothing_saveable)(h, w), None

    h, _ = jax.lax.scan(layer, x, weights)
    return jnp.mean(h.astype(jnp.float32) ** 2)


def example():
    """8 layers of width 2048 (MLP 8192), 2048 tokens, bfloat16."""

    def stacked(*shape):
        return jax.ShapeDtypeStruct((LAYERS, *shape), jnp.bfloat16)

    weights = {
        "qkv": stacked(WIDTH, 3 * WIDTH),
        "out": stacked(WIDTH, WIDTH),
        "up": stacked(WIDTH, MLP),
        "down": stacked(MLP, WIDTH),
    }
    return {"fn": stack, "args": (weights, jax.ShapeDtypeStruct((TOKENS, WIDTH), jnp.bfloat16))}


def example_small():
    """2 layers of the same block at width 256 (MLP 1024), 256 tokens: a check on the CPU."""
    weights = {
        "qkv": jax.ShapeDtypeStruct((2, 256, 768), jnp.bfloat16),
        "out": jax.ShapeDtypeStruct((2, 256, 256), jnp.bfloat16),
        "up": jax.ShapeDtypeStruct((2, 256, 1024), jnp.bfloat16),
        "down": jax.ShapeDtypeStruct((2, 1024, 256), jnp.bfloat16),
    }
    return {"fn": stack, "args": (weights, jax.ShapeDtypeStruct((256, 256), jnp.bfloat16))}
