import jax


def p(prim, *args, **params):
    return


f = jax.checkpoint(abs, policy=p)
