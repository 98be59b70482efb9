import jax


def broken(prim, *args, **params):
    return


a = jax.checkpoint(lambda x: x, policy=broken)
