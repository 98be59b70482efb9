import jax


def half_typed(prim, *args, **params:
    return prim.name ==


def broken(prim, *args, **params):
    return


f = jax.checkpoint(lambda x: x, policy=broken)
