# JAX113 (policy-member-missing): A member of jax.checkpoint_policies that the installed JAX does not have.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp

cp = jax.checkpoint_policies
f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=cp.dots_savable)

