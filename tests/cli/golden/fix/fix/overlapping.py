import functools
import jax


@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
def f(x):
    return x


g = jax.checkpoint(f, policy=lambda prim, *avals, **params: False)
