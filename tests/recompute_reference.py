"""JAX's own recompute figure: the `dot_general` FLOPs of a backward pass as JAX traces it (a
scan's body once per iteration). Shared by tests/trace_agent/advisor/test_recompute.py and
benchmarks/advise_against_jax.py, whose reference runs in a model's interpreter: JAX only here."""

from __future__ import annotations

import math

import jax
from jax._src import core as jax_core


def dot_flops(jaxpr) -> int:
    """The FLOPs of ``jaxpr``'s `dot_general` equations, those of its sub-jaxprs included."""
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (contract, _), _ = eqn.params["dimension_numbers"]
            lhs, out = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
            total += 2 * math.prod(out) * math.prod(lhs[d] for d in contract)
        times = eqn.params["length"] if eqn.primitive.name == "scan" else 1
        total += times * sum(dot_flops(sub) for sub in jax_core.jaxprs_in_params(eqn.params))
    return total


def backward_flops(fn, args) -> int:
    """The `dot_general` FLOPs of the backward pass JAX traces for ``fn`` at ``args``."""
    out, vjp_fn = jax.vjp(fn, *args)
    return dot_flops(jax.make_jaxpr(vjp_fn)(jax.numpy.ones_like(out)).jaxpr)
