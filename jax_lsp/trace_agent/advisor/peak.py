"""The training step of one candidate (the example's ``grad``) and its memory: estimated from
the traced step, or measured by compiling it.

The estimate walks the step's jaxpr (forward and backward in one, as ``jit(grad)`` compiles it)
in order and keeps a value alive from the equation that makes it to the last one that reads
it. Its peak is the largest sum of live device bytes, counting neither the arguments nor the
step's outputs (the gradients), as XLA's ``temp`` figure does not. A nested jaxpr (a scan's
body, a ``checkpoint``, a ``cond``'s branches, a ``jit``) adds its own peak to what is live
around it while it runs: a scan's stacked residuals are live, its body's working set counts
once, for one iteration.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
from jax._src import core as jax_core

from .example import short_error
from .jaxpr import open_jaxpr, sub_jaxprs
from .residuals import device_bytes


def differentiated(leaves, positional):
    """The indices of the leaves the step differentiates: the first ``positional`` that are
    floating point."""
    return [i for i in range(positional) if jnp.issubdtype(leaves[i].dtype, jnp.inexact)]


def backward(vjp_fn, out):
    """The gradients ``vjp_fn`` gives for cotangents of ones on the outputs ``out``."""
    return vjp_fn([jnp.ones_like(o) for o in out])


def step_function(forward, jaxpr, leaves, positional):
    """The step of ``jaxpr`` (the forward's, with a candidate in place): the gradient with
    respect to the `differentiated` leaves (``vjp`` with ones for a non-scalar output), every
    leaf an argument."""
    wrt = differentiated(leaves, positional)

    def step(*xs):
        replayed = forward.replay(jaxpr)

        def of(*chosen):
            full = list(xs)
            for index, value in zip(wrt, chosen):
                full[index] = value
            return replayed(*full)

        out, vjp_fn = jax.vjp(of, *(xs[i] for i in wrt))
        return backward(vjp_fn, out)

    return step


# Values XLA makes without a buffer of their own: a reshape is a bitcast, a transpose is
# usually folded into the layout of the operand's producer.
VIEWS = ("reshape", "squeeze", "expand_dims", "transpose")


def _used(jaxpr):
    """``jaxpr`` without the values nothing reads, as XLA drops them."""
    try:  # private, feature-detected: without it, a dead value counts where it is made
        from jax._src.interpreters.partial_eval import dce_jaxpr

        return dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))[0]
    except Exception:  # a release without it, or whose DCE rules miss a primitive
        return jaxpr


def _peak(jaxpr, outside):
    """The largest sum of live device bytes among the values ``jaxpr`` makes, not counting
    those in ``outside`` (its inputs and outputs, held by whoever runs it). A `VIEWS` value is
    its operand's buffer (a bitcast, or a layout XLA gives the operand)."""
    owner = {}
    for eqn in jaxpr.eqns:
        if (
            eqn.primitive.name in VIEWS
            and len(eqn.invars) == 1
            and not isinstance(eqn.invars[0], jax_core.Literal)
        ):
            owner[eqn.outvars[0]] = owner.get(eqn.invars[0], eqn.invars[0])
    outside = {*outside, *(owner[v] for v in outside if v in owner)}
    last = {}
    for index, eqn in enumerate(jaxpr.eqns):
        for var in eqn.invars:
            if not isinstance(var, jax_core.Literal):
                last[owner.get(var, var)] = index
    live, peak = 0, 0
    dying = {}
    for index, eqn in enumerate(jaxpr.eqns):
        made = [v for v in eqn.outvars if v not in owner and v not in outside]
        inner = 0
        for sub in (s for value in eqn.params.values() for s in sub_jaxprs(value)):
            inner = max(inner, _peak(sub, {*sub.invars, *sub.constvars, *sub.outvars}))
        live += sum(device_bytes(v.aval) for v in made)
        peak = max(peak, live + inner)
        for var in made:
            dying.setdefault(last.get(var, index), []).append(var)
        live -= sum(device_bytes(v.aval) for v in dying.pop(index, ()))
    return peak


def estimate_peak(step, leaves):
    """The step's temporary device bytes at its peak, from its traced jaxpr; never compiles."""
    return jaxpr_peak(open_jaxpr(jax.make_jaxpr(step)(*leaves)))


def jaxpr_peak(jaxpr):
    """The temporary device bytes at the peak of the step traced as ``jaxpr``."""
    jaxpr = _used(jaxpr)
    return _peak(jaxpr, {*jaxpr.invars, *jaxpr.constvars, *jaxpr.outvars})


def peak_or_none(estimate, *args):
    """What ``estimate(*args)`` (`estimate_peak` or `jaxpr_peak`) answers, or None where tracing
    or walking the step fails."""
    try:
        return estimate(*args)
    except MemoryError:
        raise
    except Exception:
        return None


def compile_step(step, leaves):
    """``memory_analysis()`` of ``jit(step)`` compiled for the local device, and the seconds
    that lowering and compiling took."""
    started = time.perf_counter()
    stats = jax.jit(step).lower(*leaves).compile().memory_analysis()
    compiled = {
        "temp_bytes": int(stats.temp_size_in_bytes),
        "argument_bytes": int(stats.argument_size_in_bytes),
        "output_bytes": int(stats.output_size_in_bytes),
        "alias_bytes": int(stats.alias_size_in_bytes),
    }
    return compiled, time.perf_counter() - started


def compiled_memory(step, leaves, peak):
    """The answer entry's ``compiled``, ``compile_s`` and ``estimate_error`` (the estimated
    ``peak``'s error against the compiled temporaries, a signed fraction), or
    ``compile_error``."""
    try:
        compiled, seconds = compile_step(step, leaves)
    except MemoryError:
        raise
    except Exception as exc:
        return {"compiled": None, "compile_error": short_error(exc)}
    temp = compiled["temp_bytes"]
    error = (peak - temp) / temp if peak is not None and temp else None
    return {"compiled": compiled, "compile_s": seconds, "estimate_error": error}
