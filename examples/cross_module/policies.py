# A policy defined in one module and used in another: the finding lands here,
# where the bug is, although this file never mentions jax.checkpoint.


def save_matmuls(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
