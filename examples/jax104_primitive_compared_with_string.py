# JAX104 (primitive-compared-with-string): The primitive is compared with a string, which is never equal.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp


def policy(prim, *avals, **params):
    return prim == "sin"


f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)

