# JAX102 (policy-returns-offloadable-class): A remat policy returns the class Offloadable instead of an instance.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import Offloadable


def policy(prim, *avals, **params):
    if prim.name == "sin":
        return Offloadable
    return False


f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)

