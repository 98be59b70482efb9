# JAX116 (names-passed-as-one-container): A tuple or list of checkpoint names is given as one name to a factory of names.
# `jax-lsp check examples/` reports this file.
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def block(x):
    h = checkpoint_name(jnp.sin(x), "h")
    g = checkpoint_name(jnp.sin(h), "g")
    return jnp.sin(g)


f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names(("h", "g")))

