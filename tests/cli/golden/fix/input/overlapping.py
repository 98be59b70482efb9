import jax


@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable())
def f(x):
    return x


g = jax.checkpoint(f, lambda prim: None)
