import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import Saveable

from nets.policies import offload_all, save_large, save_matmuls


def save_convs(prim, *args, **params):
    return prim in ("conv_general_dilated", "dot_general")


def wants_prim_only(prim):
    return prim.name == "sin"


def sines(prim, *_, **__):
    return Saveable if prim.name == "sin" else False


def layer(x):
    return jnp.sin(x) @ x


a = jax.checkpoint(layer, policy=save_matmuls)
b = jax.remat(layer, policy=offload_all)
c = functools.partial(jax.checkpoint, policy=save_large)(layer)
d = jax.checkpoint(layer, policy=save_convs)
e = jax.checkpoint(layer, policy=wants_prim_only)
f = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable())
g = jax.checkpoint(layer, policy=jax.checkpoint_policies.save_only_these_names)
h = jax.checkpoint(
    layer,
    policy=jax.checkpoint_policies.save_from_both_policies(jax.checkpoint_policies.dots_saveable, sines),
)


@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)
def block(x):
    return layer(layer(x))


class Dense(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(x)


RematDense = nn.remat(Dense, policy=lambda prim, *a, **k: None)
