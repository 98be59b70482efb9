import functools
import jax
import jax.numpy as jnp


def bare(prim, *args, **params):
    if prim.name == "sin":
        return False
    return True


@functools.partial(jax.checkpoint, policy=bare)
def f(x):
    return jnp.sin(x)  # café
