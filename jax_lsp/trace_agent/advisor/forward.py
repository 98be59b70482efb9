"""The example's forward jaxpr, replayable under ``vjp`` as the example itself would run.

Replaying a jaxpr is not quite running the function it came from. Where the function makes a
constant through the trace (``x * 0.5`` converts ``0.5`` to ``x``'s dtype; ``jnp.full((),
3.0)`` stages ``3.0``), tracing folds it into a literal, and a replay would hand ``vjp`` that
literal as a plain value. Under ``vjp`` the function's own code makes it a value of the trace
around the ``vjp`` instead, and if the backward pass needs it, it is a residual ("from a
literal", as ``saved_residuals`` says). So the forward trace notes which of its top level's
constants the trace made (staged, folded, or computed from constants alone), and the replay
makes each of them a value of the trace around the ``vjp`` again. A plain value the function
hands a primitive stays plain, as it does under ``vjp``.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax._src import core as jax_core

from .jaxpr import close, consts_of, marked_tracebacks, open_jaxpr

_HOOKED = ("process_primitive", "stage_value")
try:  # private, feature-detected: without them, constants are replayed as plain values
    from jax._src.interpreters import partial_eval as _pe

    _HOOKABLE = (
        all(callable(getattr(_pe.DynamicJaxprTrace, name, None)) for name in _HOOKED)
        and callable(getattr(_pe, "try_constant_folding", None))
        and hasattr(jax_core, "trace_ctx")
    )
except ImportError:
    _HOOKABLE = False


class Forward:
    """``closed``, the forward jaxpr with its top level's literals made constants, and for each
    constant whether the trace made it (``lift``: make it again in the differentiating trace).
    ``lifted``: whether the trace could note them (on JAX releases without the hooks it needs,
    none are lifted and the residuals JAX lists "from a literal" are missing)."""

    def __init__(self, closed, lift, lifted=True):
        self.closed = closed
        self.lift = lift
        self.lifted = lifted

    @property
    def jaxpr(self):
        """The forward jaxpr without its consts' values."""
        return open_jaxpr(self.closed)

    @functools.cached_property
    def marked(self):
        """`marked_tracebacks` of the forward jaxpr, the same for every candidate."""
        return marked_tracebacks(self.jaxpr)

    def replay(self, jaxpr):
        """A function of the forward's inputs evaluating ``jaxpr`` (the forward's, with a candidate
        in place); call it inside the trace that differentiates it."""
        consts = [
            jax_core.trace_ctx.trace.stage_value(value) if lift else value
            for value, lift in zip(consts_of(self.closed), self.lift)
        ]
        return lambda *xs: jax_core.eval_jaxpr(jaxpr, consts, *xs)

    def warm_jvp(self, leaves):
        """Trace the forward's JVP once (a float0 tangent for each integer leaf), so that JAX's
        caches hold what every candidate's ``vjp`` traces alike: the JVP of each checkpointed
        body, whatever its policy, and the shape rules of the primitives met. Done before the
        worker forks, it is done once for both processes; the policy is never asked."""

        def jvp(*xs):
            tangents = tuple(x if _inexact(x) else np.zeros(np.shape(x), jax.dtypes.float0) for x in xs)
            return jax.jvp(self.replay(self.jaxpr), xs, tangents)

        jax.make_jaxpr(jvp)(*leaves)


def _inexact(x):
    return jax.numpy.issubdtype(x.dtype, jax.numpy.inexact)


def _plain(closed):
    return Forward(closed, [False] * len(consts_of(closed)), lifted=False)


def trace_forward(fn, leaves):
    """``make_jaxpr(fn)(*leaves)`` as a `Forward`."""
    if not _HOOKABLE:
        return _plain(jax.make_jaxpr(fn)(*leaves))
    trace_class, fold_constants = _pe.DynamicJaxprTrace, _pe.try_constant_folding
    made, top = {}, []

    def note(values):
        for value in values:
            if value is not None:
                made[id(value)] = value

    def process_primitive(trace, primitive, tracers, params, /):
        out = originals["process_primitive"](trace, primitive, tracers, params)
        if top and trace is top[0] and all(_const(t, trace) is not None for t in tracers):
            note(_const(t, trace) for t in (out if primitive.multiple_results else [out]))
        return out

    def stage_value(trace, value):
        out = originals["stage_value"](trace, value)
        if top and trace is top[0]:
            note([_const(out, trace)])
        return out

    def fold(primitive, tracers, params, out_avals):
        out = fold_constants(primitive, tracers, params, out_avals)
        if out is not None and top and all(getattr(t, "_trace", None) is top[0] for t in tracers):
            note(out)
        return out

    def entry(*xs):
        top.append(jax_core.trace_ctx.trace)
        return fn(*xs)

    originals = {name: getattr(trace_class, name) for name in _HOOKED}
    hooks = {"process_primitive": process_primitive, "stage_value": stage_value}
    for name in _HOOKED:
        setattr(trace_class, name, hooks[name])
    _pe.try_constant_folding = fold
    try:
        closed = jax.make_jaxpr(entry)(*leaves)
    finally:
        for name, original in originals.items():
            setattr(trace_class, name, original)
        _pe.try_constant_folding = fold_constants
    try:
        return _lifted(closed, made)
    except (TypeError, AttributeError):  # a JAX whose Var or Jaxpr is built otherwise
        return _plain(closed)


def _const(value, trace):
    """The constant ``value`` is, when it is one of ``trace``'s constants or a plain value; else None."""
    if isinstance(value, _pe.DynamicJaxprTracer):
        return value.get_const() if getattr(value, "_trace", None) is trace else None
    return None if isinstance(value, jax_core.Tracer) else value


def _lifted(closed, made):
    """``closed`` with the top level's literals that the trace made as constants, and which
    constants to lift."""
    jaxpr = open_jaxpr(closed)
    literals = {}  # id(Literal) -> (its new constvar, the Literal)

    def atom(var):
        if isinstance(var, jax_core.Literal) and made.get(id(var.val)) is var.val:
            literals.setdefault(id(var), (jax_core.Var(var.aval), var))
            return literals[id(var)][0]
        return var

    eqns = [eqn.replace(invars=[atom(v) for v in eqn.invars]) for eqn in jaxpr.eqns]
    outvars = [atom(v) for v in jaxpr.outvars]
    new_vars = [var for var, _ in literals.values()]
    new = jaxpr.replace(constvars=[*jaxpr.constvars, *new_vars], eqns=eqns, outvars=outvars)
    consts = [*consts_of(closed), *(literal.val for _, literal in literals.values())]
    return Forward(close(new, consts), [made.get(id(c)) is c for c in consts])
