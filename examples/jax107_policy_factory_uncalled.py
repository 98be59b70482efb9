# JAX107 (policy-factory-uncalled): A policy factory of jax.checkpoint_policies is passed without being called.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def g(x):
    return jnp.sin(checkpoint_name(jnp.sin(x), "inner"))


f = jax.checkpoint(g, policy=jax.checkpoint_policies.save_only_these_names)

