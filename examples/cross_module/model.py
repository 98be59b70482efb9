import jax
import jax.numpy as jnp

from policies import save_matmuls


@jax.checkpoint
def layer(x):
    return jnp.tanh(x @ x)


block = jax.checkpoint(lambda x: jnp.tanh(x @ x), policy=save_matmuls)
