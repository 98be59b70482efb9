import jax
import numpy as np


def prim_only(prim, *avals, **params):
    return bool(np.any(prim.name == "sin"))


g = jax.checkpoint(lambda x: x, policy=prim_only)
h = jax.checkpoint(lambda x: x, policy=lambda prim, *avals, **params: False)
