# JAX101 (policy-returns-none): A remat policy returns None on some path.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp


def policy(prim, *avals, **params):
    if prim.name == "sin":
        return True


f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)

