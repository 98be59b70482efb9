# JAX109 (checkpoint-without-function): jax.checkpoint used as a decorator factory, or given the policy positionally.
# `jax-lsp check examples/` reports this file.
"""A block that saves only what the sine produces."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def policy(prim, *avals, **params):
    return prim.name == "sin"


@jax.checkpoint(policy=policy)
def f(x):
    return jnp.sin(jnp.sin(x))

