"""Policies shared by the models (used in model.py: findings land here)."""

import numpy as np
from jax.ad_checkpoint import Offloadable


def save_matmuls(prim, *args, **params):
    if prim.name == "dot_general":
        return True


def offload_all(prim, *args, **params):
    return Offloadable


def save_large(prim, *avals, **params):
    return np.any([a.size > 4096 for a in avals])
