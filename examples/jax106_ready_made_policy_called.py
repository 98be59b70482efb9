# JAX106 (ready-made-policy-called): A ready-made policy of jax.checkpoint_policies is called instead of passed.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp

f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.dots_saveable())

