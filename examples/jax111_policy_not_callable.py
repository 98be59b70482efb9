# JAX111 (policy-not-callable): A literal (a policy's name as a string, `True`, a number) is passed as the policy.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp

f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy="dots_saveable")

