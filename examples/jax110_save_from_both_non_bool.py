# JAX110 (save-from-both-non-bool): A policy combined with save_from_both_policies returns something other than a bool.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import Recompute, Saveable

cp = jax.checkpoint_policies


def sines(prim, *avals, **params):
    return Saveable if prim.name == "sin" else Recompute


f = jax.checkpoint(
    lambda x: jnp.sin(x) @ x, policy=cp.save_from_both_policies(cp.dots_saveable, sines)
)

