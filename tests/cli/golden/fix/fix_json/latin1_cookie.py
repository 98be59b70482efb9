# -*- coding: latin-1 -*-
"""Politique de rematérialisation."""
import jax


def falls_off(prim, *args, **params):
    if prim.name == "dot_general":
        return True
    return False


def compares(prim, *args, **params):
    return prim == "dot_general"


a = jax.checkpoint(lambda x: x, policy=falls_off)
b = jax.checkpoint(lambda x: x, policy=compares)
