# JAX114 (excluded-names-still-saved): save_anything_except_these_names saves everything, its names included, in the installed JAX.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

cp = jax.checkpoint_policies


def block(x):
    big = checkpoint_name(jnp.sin(x), "big")
    return big * big


f = jax.checkpoint(block, policy=cp.save_anything_except_these_names("big"))

