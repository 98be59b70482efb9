# JAX107 (policy-factory-uncalled): A policy factory of jax.checkpoint_policies is passed without being called.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp

f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.save_only_these_names)

