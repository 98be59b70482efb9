import jax
import jax.numpy as jnp


def bare(prim, *args, **params):
    if prim.name == "sin":
        return
    return True


@jax.checkpoint(policy=bare)
def f(x):
    return jnp.sin(x)  # café
