# JAX117 (static-argnums-out-of-range): static_argnums of a checkpoint points past the positional parameters of its function.
# `jax-lsp check examples/` reports this file.
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.checkpoint, static_argnums=(1,))
def g(x, *, power=2):
    return jnp.sin(x) ** power


def f(x):
    return g(x, power=3)

