import functools

import jax
import numpy as np
from jax import lax
from jax.ad_checkpoint import Offloadable, Recompute, Saveable


def by_name(prim, *avals, **params):
    return prim.name == "dot_general"


def by_size(prim, *avals, **params):
    return bool(np.prod(avals[0].shape) > 4096)


def offload(prim, *_, **__):
    if prim is lax.dot_general_p:
        return Offloadable(src="device", dst="pinned_host")
    if str(prim) == "sin":
        return Saveable
    return Recompute


def never_falls_off(prim, *_, **__):
    while True:
        if prim.name == "sin":
            return True


def layer(x):
    return jax.numpy.sin(x) @ x


a = jax.checkpoint(layer, policy=by_name)
b = jax.checkpoint(layer, policy=by_size)
c = functools.partial(jax.checkpoint, policy=offload)(layer)
d = jax.checkpoint(layer, policy=never_falls_off)
e = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)


def checkpoint(fn, policy=None):
    """A project's own `checkpoint`: not JAX's, never a policy site."""
    return fn


f = checkpoint(layer, policy=lambda: None)
