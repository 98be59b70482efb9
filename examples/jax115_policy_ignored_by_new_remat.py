# JAX115 (policy-ignored-by-new-remat): Under JAX's new remat (jax_remat3), a policy written as a function is ignored and everything is recomputed.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp

jax.config.update("jax_remat3", True)


def save_dots(prim, *avals, **params):
    return prim is jax.lax.dot_general_p


def f(x):
    return jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=save_dots)(x)

