# JAX105 (offload-memory-kind-invalid): An offloading policy names a memory kind or keyword that JAX does not offload with.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import Offloadable


def policy(prim, *avals, **params):
    if prim.name == "sin":
        return Offloadable(src="device", dst="host")
    return False


f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)

