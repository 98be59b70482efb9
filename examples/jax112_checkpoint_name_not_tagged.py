# JAX112 (checkpoint-name-not-tagged): A policy names a checkpoint name that no checkpoint_name tag in reach carries.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def block(x):
    h = checkpoint_name(jnp.sin(x), "attn_out")
    return jnp.sin(h)


f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_outt"))

