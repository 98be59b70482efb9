# JAX103 (policy-returns-invalid-type): A remat policy returns a value that is not a bool, Saveable, Recompute or Offloadable.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
import numpy as np


def policy(prim, *avals, **params):
    return np.prod(avals[0].shape) > 8


f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)

