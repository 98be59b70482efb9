import jax


def compares(prim, *args, **params):
    return prim == "sin"


def silenced(prim, *args, **params):
    return  # noqa: JAX101


def silenced_other_code(prim, *args, **params):
    return  # noqa: JAX104


def silenced_all(prim, *args, **params):
    return None  # noqa


a = jax.checkpoint(lambda x: x, policy=compares)
b = jax.checkpoint(lambda x: x, policy=silenced)
c = jax.checkpoint(lambda x: x, policy=silenced_other_code)
d = jax.checkpoint(lambda x: x, policy=silenced_all)
