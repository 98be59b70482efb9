# JAX118 (decisions-combined-with-or): Policy decisions that are always true (Saveable, Recompute, Offloadable) combined with or/and.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

cp = jax.checkpoint_policies
save_h = cp.save_and_offload_only_these_names(
    names_which_can_be_saved=["h"],
    names_which_can_be_offloaded=[],
    offload_src="device",
    offload_dst="pinned_host",
)
save_g = cp.save_only_these_names("g")


def policy(prim, *avals, **params):
    return save_h(prim, *avals, **params) or save_g(prim, *avals, **params)


def block(x):
    h = checkpoint_name(jnp.sin(x), "h")
    g = checkpoint_name(jnp.sin(h), "g")
    return jnp.sin(g)


f = jax.checkpoint(block, policy=policy)

