"""Walking jaxprs: the site's markers and names, a candidate put in place, recomputed FLOPs."""

from __future__ import annotations

import math

from jax._src import core as jax_core

from .site import Marker

FLOP_PRIMITIVES = ("dot_general", "conv_general_dilated")

# A closed jaxpr: a jaxpr with the values of its constvars. Up to JAX 0.11 a ClosedJaxpr wraps a
# Jaxpr and the consts; from 0.12 on there is no ClosedJaxpr, a Jaxpr carries its consts itself.
_CLOSED_JAXPR = getattr(jax_core, "ClosedJaxpr", jax_core.Jaxpr)


def is_closed(value):
    """Whether ``value`` is a closed jaxpr (from JAX 0.12 on, any jaxpr)."""
    return isinstance(value, _CLOSED_JAXPR)


def open_jaxpr(closed):
    """The jaxpr of the closed jaxpr ``closed`` (from JAX 0.12 on, ``closed`` itself)."""
    return closed if _CLOSED_JAXPR is jax_core.Jaxpr else closed.jaxpr


def consts_of(closed):
    """The values of the closed jaxpr's constvars, in their order."""
    return closed.consts


def close(jaxpr, consts):
    """The closed jaxpr of ``jaxpr`` whose constvars hold ``consts``."""
    if _CLOSED_JAXPR is jax_core.Jaxpr:
        return jaxpr.with_consts(consts)
    return _CLOSED_JAXPR(jaxpr, consts)


def with_outvars(jaxpr, outvars):
    """``jaxpr`` with the outputs ``outvars``. Its debug info, which JAX checks against the
    outputs, no longer names them (up to JAX 0.4, a jaxpr may have none)."""
    unknown = getattr(jaxpr.debug_info, "with_unknown_names", None)
    return jaxpr.replace(outvars=outvars, debug_info=unknown() if unknown is not None else None)


def primitive_name(eqn):
    """The name of ``eqn``'s primitive. JAX 0.12's linear jaxprs wrap a primitive they
    differentiate in a ``VJPNode`` (``vjp_node[scan]``, with the scan's parameters): its name is the
    wrapped primitive's."""
    return getattr(eqn.primitive, "prim", eqn.primitive).name


def scan_counts(eqn):
    """(consts, carry): how many of the scan ``eqn``'s inputs are each, or None where its params
    do not say. Up to JAX 0.11 the params count them (``num_consts``, ``num_carry``); from 0.12 on
    ``ft_in`` holds them, a flat tree of three groups (consts, carry, stacked)."""
    if "num_consts" in eqn.params:
        return eqn.params["num_consts"], eqn.params["num_carry"]
    try:  # private and young: unpacked as jax 0.12's `FlatTree` is
        counts = [len(group) for group in eqn.params["ft_in"].unpack()]
    except Exception:
        return None
    if len(counts) != 3 or sum(counts) != len(eqn.invars):
        return None
    return counts[0], counts[1]


def is_new_remat(value):
    """Whether ``value``, an equation's parameter, is a checkpoint of the new remat
    (``jax_remat3``): an object held by a ``call_hi_primitive`` equation, with the checkpointed
    jaxpr and the policy in its ``params``, rebuilt by its class from them."""
    params = getattr(value, "params", None)
    return isinstance(params, dict) and "jaxpr" in params and "policy" in params


def _policy_of(eqn):
    """The policy of a checkpoint equation, the old remat's or the new one's; None for others."""
    inner = eqn.params.get("_prim")
    return inner.params["policy"] if is_new_remat(inner) else eqn.params.get("policy")


# Parameter values that hold no jaxpr, told apart at once: most of an equation's parameters.
_PLAIN = (bool, int, float, str, type(None))


def sub_jaxprs(value):
    """The jaxprs in an equation's parameter value."""
    if isinstance(value, _PLAIN):
        return
    if is_new_remat(value):
        yield from sub_jaxprs(value.params["jaxpr"])
    elif is_closed(value):
        yield open_jaxpr(value)
    elif isinstance(value, jax_core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            if not isinstance(item, _PLAIN):
                yield from sub_jaxprs(item)


def eqn_jaxprs(eqn):
    """The jaxprs in ``eqn``'s parameters, in their order."""
    return [
        sub for value in eqn.params.values() if not isinstance(value, _PLAIN) for sub in sub_jaxprs(value)
    ]


def _walk_eqns(jaxpr, inside=False):
    """(eqn, inside a marked checkpoint) for every equation, nested jaxprs included."""
    for eqn in jaxpr.eqns:
        marked = isinstance(_policy_of(eqn), Marker)
        yield eqn, inside
        for value in eqn.params.values():
            for sub in sub_jaxprs(value):
                yield from _walk_eqns(sub, inside or marked)


def markers_in(jaxpr):
    """The site's markers in ``jaxpr``, one per marked checkpoint equation, nested ones included."""
    return [policy for eqn, _ in _walk_eqns(jaxpr) if isinstance(policy := _policy_of(eqn), Marker)]


def marked_tracebacks(jaxpr):
    """The ids of the tracebacks of the equations inside the marked checkpoints. The equations JAX
    derives from one (its JVP, the forward part it keeps) carry the same traceback object."""
    found = set()
    for eqn, inside in _walk_eqns(jaxpr):
        traceback = getattr(eqn.source_info, "traceback", None)
        if inside and traceback is not None:
            found.add(id(traceback))
    return found


def tagged_names(jaxpr):
    """The ``checkpoint_name`` names inside the marked checkpoints, in order of first use."""
    names = []
    for eqn, inside in _walk_eqns(jaxpr):
        if inside and primitive_name(eqn) == "name":
            name = eqn.params.get("name")
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def name_places(jaxpr):
    """``{name: (inside, outside)}``: the source infos of the ``checkpoint_name`` equations of each
    name inside the marked checkpoints and outside them."""
    places = {}
    for eqn, inside in _walk_eqns(jaxpr):
        if primitive_name(eqn) == "name" and isinstance(eqn.params.get("name"), str):
            places.setdefault(eqn.params["name"], ([], []))[0 if inside else 1].append(eqn.source_info)
    return places


def _substitute_value(value, choose, memo):
    if is_new_remat(value):
        policy = value.params["policy"]
        new_policy = choose(policy) if isinstance(policy, Marker) else policy
        inner = _substitute_value(value.params["jaxpr"], choose, memo)
        if new_policy is policy and inner is value.params["jaxpr"]:
            return value
        return type(value)(**{**value.params, "jaxpr": inner, "policy": new_policy})
    if is_closed(value):
        inner = substitute(open_jaxpr(value), choose, memo)
        return value if inner is open_jaxpr(value) else close(inner, consts_of(value))
    if isinstance(value, jax_core.Jaxpr):
        return substitute(value, choose, memo)
    if isinstance(value, (tuple, list)) and value:
        items = [_substitute_value(v, choose, memo) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    return value


def substitute(jaxpr, choose, memo):
    """``jaxpr`` with every marked policy replaced by ``choose(marker)``."""
    key = id(jaxpr)
    if key in memo:
        return memo[key][1]
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        params = None
        for name, value in eqn.params.items():
            if name == "policy" and isinstance(value, Marker):
                new = choose(value)
            else:
                new = _substitute_value(value, choose, memo)
            if new is not value:
                params = dict(eqn.params) if params is None else params
                params[name] = new
        if params is not None:
            eqn = eqn.replace(params=params)
            changed = True
        eqns.append(eqn)
    result = jaxpr.replace(eqns=eqns) if changed else jaxpr
    memo[key] = (jaxpr, result)  # keep jaxpr alive so its id stays unique
    return result


def _flops(eqn):
    if primitive_name(eqn) == "dot_general":
        (contract, _), _ = eqn.params["dimension_numbers"]
        lhs = eqn.invars[0].aval.shape
        out = eqn.outvars[0].aval.shape
        return 2 * math.prod(out) * math.prod(lhs[d] for d in contract)
    if primitive_name(eqn) == "conv_general_dilated":
        rhs = eqn.invars[1].aval.shape
        out = eqn.outvars[0].aval.shape
        spec = eqn.params["dimension_numbers"].rhs_spec
        out_features = rhs[spec[0]]
        return 2 * math.prod(out) * (math.prod(rhs) // max(out_features, 1))
    return 0


def _loop_fixpoint(body, fixed, carried, trailing):
    """(FLOPs, tainted outputs) of a loop ``body`` whose inputs are ``fixed`` (consts), then the
    carry (``carried`` tainted on entry), then ``trailing``: a carry tainted in any iteration is
    tainted in the first (the body's carry outputs come first)."""
    while True:
        flops, outs = _tainted(body, [*fixed, *carried, *trailing])
        grown = [a or b for a, b in zip(carried, outs)]
        if grown == carried:
            return flops, outs
        carried = grown


def _nested(eqn, subs, ins):
    """(FLOPs, tainted outputs) of an equation that holds jaxprs, ``ins`` its tainted inputs."""
    name = primitive_name(eqn)
    counts = scan_counts(eqn) if name == "scan" else None
    if counts is not None and len(subs) == 1:
        consts, carry = counts
        flops, outs = _loop_fixpoint(
            subs[0], ins[:consts], ins[consts : consts + carry], ins[consts + carry :]
        )
        return eqn.params.get("length", 1) * flops, outs
    if name == "while" and len(subs) == 2:
        cond_n, body_n = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
        cond, body = (open_jaxpr(eqn.params[k]) for k in ("cond_jaxpr", "body_jaxpr"))
        carried = ins[cond_n + body_n :]
        flops, outs = _loop_fixpoint(body, ins[cond_n : cond_n + body_n], carried, [])
        # the trip count is not known here: one iteration counted
        return flops + _tainted(cond, [*ins[:cond_n], *outs])[0], outs
    if name == "cond" and all(len(s.invars) == len(ins) - 1 for s in subs):
        found = [_tainted(s, ins[1:]) for s in subs]
        outs = [ins[0] or any(column) for column in zip(*(o for _, o in found))]
        return max(f for f, _ in found), outs
    if len(subs) == 1 and len(subs[0].invars) == len(ins) and len(subs[0].outvars) == len(eqn.outvars):
        return _tainted(subs[0], ins)  # a call: jit, checkpoint, custom_jvp/vjp, closed_call
    # a form not known here: every output tainted by any input, every jaxpr run once
    flops = sum(_tainted(s, [any(ins)] * len(s.invars))[0] for s in subs)
    return flops, [any(ins)] * len(eqn.outvars)


def _tainted(jaxpr, tainted_in):
    """(FLOPs of the ``dot_general``/convolutions in ``jaxpr`` that read no tainted value, which
    outputs are tainted): a value is tainted when it is computed from a tainted input."""
    tainted = {v for v, is_tainted in zip(jaxpr.invars, tainted_in) if is_tainted}
    total = 0
    for eqn in jaxpr.eqns:
        ins = [not isinstance(v, jax_core.Literal) and v in tainted for v in eqn.invars]
        subs = eqn_jaxprs(eqn)
        if subs:
            flops, outs = _nested(eqn, subs, ins)
            total += flops
            tainted.update(v for v, is_tainted in zip(eqn.outvars, outs) if is_tainted)
        elif any(ins):
            tainted.update(eqn.outvars)
        elif primitive_name(eqn) in FLOP_PRIMITIVES:
            total += _flops(eqn)
    outs = [not isinstance(v, jax_core.Literal) and v in tainted for v in jaxpr.outvars]
    return total, outs


def recompute_flops(backward_jaxpr):
    """FLOPs of the ``dot_general``/convolutions that the backward pass ``backward_jaxpr`` (what
    ``jax.vjp``'s function runs: its inputs are the cotangents, the residuals its consts) computes
    without reading a cotangent: forward work done again. A scan's body counts once per
    iteration."""
    return _tainted(backward_jaxpr, [True] * len(backward_jaxpr.invars))[0]


def linear_jaxpr(vjp_fn):
    """The linear (backward) jaxpr held by what ``jax.vjp`` returned, across releases, with the
    residuals as its constvars and one invar per leaf of the arguments (their tangents)."""
    jaxpr = _held_jaxpr(vjp_fn)
    tangents = getattr(getattr(vjp_fn, "in_tree", None), "num_leaves", None)
    if jaxpr is None or jaxpr.constvars or tangents is None or len(jaxpr.invars) <= tangents:
        return jaxpr
    # JAX 0.12 holds it without consts, so the residuals are its leading invars. Attached as
    # consts, their avals stand for their values (nothing evaluates this jaxpr).
    return close(jaxpr, [var.aval for var in jaxpr.invars[: len(jaxpr.invars) - tangents]])


def _held_jaxpr(vjp_fn):
    jaxpr = getattr(vjp_fn, "jaxpr", None)
    if isinstance(jaxpr, jax_core.Jaxpr):
        return jaxpr
    seen, queue = set(), [vjp_fn]
    while queue:
        value = queue.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if is_closed(value):
            return open_jaxpr(value)
        if isinstance(value, jax_core.Jaxpr):
            return value
        for attr in ("func", "fun", "args", "keywords"):
            inner = getattr(value, attr, None)
            if isinstance(inner, (tuple, list)):
                queue.extend(inner)
            elif isinstance(inner, dict):
                queue.extend(inner.values())
            elif inner is not None:
                queue.append(inner)
    return None
