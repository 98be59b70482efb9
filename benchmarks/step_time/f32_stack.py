"""A scanned stack of float32 matrix layers at a TPU chip's scale: the site and its example in one
file (benchmarks/step_time/). 8 layers of 2048 x 2048 under one `lax.scan`, 4096 rows, the layer's
output tagged `hidden`; XLA:TPU multiplies float32 matrices in several bfloat16 passes."""

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def layer(h, w):
    return checkpoint_name(jnp.tanh(h @ w), "hidden") * 0.5 + h


def stack(weights, x):
    def body(h, w):
        return jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)(h, w), None

    h, _ = jax.lax.scan(body, x, weights)
    return jnp.mean(h**2)


def example():
    """8 layers of 2048 x 2048, 4096 rows, float32."""
    weights = jax.ShapeDtypeStruct((8, 2048, 2048), jnp.float32)
    return {"fn": stack, "args": (weights, jax.ShapeDtypeStruct((4096, 2048), jnp.float32))}


def example_small():
    """2 layers of 256 x 256, 512 rows: a check on the CPU."""
    weights = jax.ShapeDtypeStruct((2, 256, 256), jnp.float32)
    return {"fn": stack, "args": (weights, jax.ShapeDtypeStruct((512, 256), jnp.float32))}
