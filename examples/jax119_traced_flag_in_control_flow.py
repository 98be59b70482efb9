# JAX119 (traced-flag-in-control-flow): A checkpointed function's parameter that JAX traces decides Python control flow.
# `jax-lsp check examples/` reports this file.
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.checkpoint, static_argnums=(1,))
def layer(x, scale, train):
    if train:
        x = x * 0.5
    return jnp.sin(x) * scale


def f(x):
    return layer(x, 2.0, True)

