"""Why a candidate policy keeps each residual, and which lines of the backward pass read it.

The candidate goes into the marked checkpoints wrapped in a `Chosen`, which answers as the
policy does and records every answer JAX asked of it. A residual's ``reason`` is then read
from the trace: the equation that made the value (through an offload's copy and into the
scans and jitted functions that return it), whether that equation is one of the marked
checkpoints' (JAX derives every equation of a checkpoint's forward and backward pass under
the traceback of the forward equation it comes from, so the forward jaxpr's tracebacks say
which), and what the policy answered for it. ``used_by`` reads the linear (backward) jaxpr
of the same ``vjp``: the equations that read the residual, followed into the nested jaxprs
that take it, each at its user's line.
"""

from __future__ import annotations

import jax
from jax._src import core as jax_core

from .jaxpr import is_closed, open_jaxpr, primitive_name, sub_jaxprs

# The equations that only copy a value: an offload's device_put, remat's reduce_precision.
COPIES = ("device_put", "reduce_precision")
REMAT = ("checkpoint", "remat2", "remat")


class Chosen:
    """A candidate policy in the marked checkpoints: it answers as ``policy`` does (JAX's default,
    ``nothing_saveable``, for None) and records each answer by primitive and input avals, while
    ``recording``. ``asked`` keeps every question and answer, in order, recording or not."""

    def __init__(self, policy):
        self.policy = policy or jax.checkpoint_policies.nothing_saveable
        self.answers = {}
        self.asked = []
        self.recording = True

    def __call__(self, prim, *avals, **params):
        answer = self.policy(prim, *avals, **params)
        self.asked.append((prim, avals, params, answer))
        if self.recording:
            self.answers.setdefault((prim.name, avals), []).append((params, answer))
        return answer

    def answered_alike(self, policy):
        """Whether ``policy`` gives every answer this one gave, to the same questions. JAX's
        tracing is a function of the policy's answers: where a pure policy answers all of them
        alike, tracing with it asks the same questions and makes the same jaxprs."""
        for prim, avals, params, answer in self.asked:
            try:
                mine = policy(prim, *avals, **params)
                if type(mine) is not type(answer) or not bool(mine == answer):
                    return False
            except Exception:
                return False
        return True

    def answer_for(self, eqn):
        """What the policy answered for ``eqn``, or None when JAX never asked it. Where the
        parameters were made anew since (a ``custom_jvp_call``'s functions), the answer JAX got
        for every equation of that primitive and those avals, when it got one answer."""
        asked = self.answers.get((primitive_name(eqn), tuple(v.aval for v in eqn.invars)), ())
        for params, answer in asked:
            try:
                same = params == eqn.params
            except Exception:  # params holding arrays: not this one
                same = False
            if same:
                return answer
        kinds = {_kept(answer) for _, answer in asked}
        return asked[0][1] if len(kinds) == 1 else None


def _kept(answer):
    """``offloaded``, ``saved`` or None (recomputed) for a policy's answer, as JAX reads it:
    ``True`` or ``Saveable``, ``Offloadable(...)``."""
    if type(answer).__name__ == "Offloadable":
        return "offloaded"
    if answer is True or type(answer).__name__ == "SaveableType":
        return "saved"
    return None


def _producers(jaxpr, memo):
    key = id(jaxpr)
    if key not in memo:
        memo[key] = (jaxpr, {var: eqn for eqn in jaxpr.eqns for var in eqn.outvars})
    return memo[key][1]


def _body_outvar(eqn, index):
    """The outvar of ``eqn``'s nested jaxpr that gives its output ``index`` (a scan's, a jitted
    function's), else None."""
    if primitive_name(eqn) not in ("scan", "pjit", "jit", "closed_call"):
        return None
    inner = eqn.params.get("jaxpr")
    inner = open_jaxpr(inner) if is_closed(inner) else inner
    if not isinstance(inner, jax_core.Jaxpr) or len(inner.outvars) != len(eqn.outvars):
        return None
    return inner, inner.outvars[index]


def origin(jaxpr, var, memo):
    """The equations that made ``var``, past copies: the first found (in ``jaxpr``) and the one
    inside the nested jaxprs that return it (None where it is an input passed through)."""
    first = None
    while isinstance(var, jax_core.Var):
        eqn = _producers(jaxpr, memo).get(var)
        if eqn is None:
            return first, None
        if primitive_name(eqn) in COPIES and eqn.invars:
            var = eqn.invars[0]
            continue
        first = first or eqn
        inner = _body_outvar(eqn, eqn.outvars.index(var))
        if inner is None:
            return first, eqn
        jaxpr, var = inner
    return first, None


def _inner_invars(eqn, param, sub, index):
    """The invars of ``sub`` (the jaxpr in ``eqn``'s parameter ``param``) that receive ``eqn``'s
    input ``index``; None where the advisor does not know how ``eqn`` passes its inputs on."""
    n = len(sub.invars)
    if primitive_name(eqn) == "cond":  # the branch index first, then each branch's operands
        if index == 0:
            return []
        index -= 1
    elif primitive_name(eqn) == "while":  # cond's consts, body's consts, then the carry
        cond_n, body_n = eqn.params.get("cond_nconsts", 0), eqn.params.get("body_nconsts", 0)
        start, count = (0, cond_n) if param == "cond_jaxpr" else (cond_n, body_n)
        if index >= cond_n + body_n:
            index = index - cond_n - body_n + count
        elif start <= index < start + count:
            index -= start
        else:
            return []
    elif len(eqn.invars) != n:
        return None
    return [sub.invars[index]] if 0 <= index < n else None


class Readers:
    """The equations of the backward pass that read a value, and whether a marked checkpoint
    (its policy one of ``chosen``) takes it as an input."""

    def __init__(self, chosen, memo):
        self.chosen = chosen
        self.memo = memo  # id(jaxpr) -> (jaxpr, {var: [(eqn, its input positions of var)]})
        self.lines = []
        self.by_checkpoint = False
        self.known = True

    def _readers(self, jaxpr):
        key = id(jaxpr)
        if key not in self.memo:
            found = {}
            for eqn in jaxpr.eqns:
                for index, var in enumerate(eqn.invars):
                    if isinstance(var, jax_core.Var):
                        positions = found.setdefault(var, {}).setdefault(id(eqn), (eqn, []))[1]
                        positions.append(index)
            self.memo[key] = (jaxpr, {var: list(eqns.values()) for var, eqns in found.items()})
        return self.memo[key][1]

    def walk(self, jaxpr, var, frames):
        for eqn, positions in self._readers(jaxpr).get(var, ()):
            if primitive_name(eqn) in COPIES:  # an offloaded value's reload: its readers read it
                for out in eqn.outvars:
                    self.walk(jaxpr, out, frames)
                continue
            if primitive_name(eqn) in REMAT and any(eqn.params.get("policy") is c for c in self.chosen):
                self.by_checkpoint = True
            subs = [(name, s) for name, value in eqn.params.items() for s in sub_jaxprs(value)]
            if not subs:
                path, line = frames.line_of(eqn.source_info)
                if path is not None and (path, line) not in self.lines:
                    self.lines.append((path, line))
                continue
            for name, sub in subs:
                for index in positions:
                    inner = _inner_invars(eqn, name, sub, index)
                    if inner is None:
                        self.known = False
                    for invar in inner or ():
                        self.walk(sub, invar, frames)


def backward_inputs(vjp_fn, linear):
    """For each residual leaf of ``vjp_fn`` (by its index among the leaves), the constvars of the
    linear jaxpr ``linear`` it is; None where this JAX release holds them otherwise."""
    leaves = jax.tree_util.tree_leaves(vjp_fn)
    constvars = list(linear.constvars)
    fun = getattr(vjp_fn, "fun", None)
    spec = getattr(fun, "args", ())[:1]
    spec = spec[0] if spec and isinstance(spec[0], list) else None
    if spec is not None and all(hasattr(s, "idx") and hasattr(s, "primal") for s in spec):
        # jax.vjp's VJP: each residual is one of the arguments or one of its own, by index
        primals = jax.tree_util.tree_leaves(
            getattr(vjp_fn, "args_res", ()), is_leaf=lambda x: type(x).__name__ == "NotNeeded"
        )
        opaque = list(getattr(vjp_fn, "opaque_residuals", ()))
        values = [primals[s.idx] if s.primal else opaque[s.idx] for s in spec]
    elif len(leaves) == len(constvars):  # older releases: a Partial of the residuals, in order
        values = leaves
    else:
        return None
    if len(values) != len(constvars):
        return None
    where = {id(leaf): index for index, leaf in enumerate(leaves)}
    found = {}
    for value, var in zip(values, constvars):
        if id(value) in where:
            found.setdefault(where[id(value)], []).append(var)
    return found


class Why:
    """Explains the residuals of one candidate: ``reason`` and ``used_by`` of each."""

    def __init__(self, marked, jaxpr, chosen, linear, inputs, frames):
        self.marked = marked  # the forward's `marked_tracebacks`
        self.jaxpr = jaxpr
        self.chosen = chosen
        self.linear = linear
        self.inputs = inputs  # residual leaf index -> the linear jaxpr's constvars, or None
        self.frames = frames
        self.memo = {}
        self.read_memo = {}

    def readers(self, index):
        readers = Readers(self.chosen, self.read_memo)
        if self.linear is None or self.inputs is None or index not in self.inputs:
            readers.known = False
            return readers
        for var in self.inputs[index]:
            readers.walk(self.linear, var, self.frames)
        return readers

    def __call__(self, index, var, kind):
        readers = self.readers(index)
        used_by = [{"path": p, "line": n} for p, n in readers.lines] if readers.known else None
        first, eqn = origin(self.jaxpr, var, self.memo) if kind == "computed" else (None, None)
        found = {"reason": self.reason(kind, readers, first, eqn), "used_by": used_by}
        if eqn is not None and primitive_name(eqn) == "name":  # made in a scan or a jit: its name
            found["name"] = eqn.params.get("name")
        if eqn is not None:  # the expression that made it, inside the scan or jit that returns it
            path, _ = self.frames.line_of(eqn.source_info)
            span = self.frames.span_of(eqn.source_info)
            found["made_at"] = {"path": path, "span": span} if path is not None and span is not None else None
        return found

    def reason(self, kind, readers, first, eqn):
        """See docs/advise.md; None where the policy was never asked about the equation inside the
        checkpoint that made the value (a ``cond``'s output, a loop's carry passed through).
        ``first``, ``eqn``: the value's `origin`."""
        if kind == "argument":
            return "argument"
        if not self._inside(eqn):
            return None if self._inside(first) else ("argument" if readers.by_checkpoint else "default")
        answers = [chosen.answer_for(eqn) for chosen in self.chosen]
        kept = [_kept(answer) for answer in answers if answer is not None]
        if not kept:
            return None
        if "offloaded" in kept:
            return "offloaded"
        if _effectful(eqn):  # kept whatever the policy answered
            return "default"
        if "saved" in kept:
            return "named" if primitive_name(eqn) == "name" else "policy"
        # recomputed inside its checkpoint: kept as a later checkpoint's input, or for code outside
        return "argument" if readers.by_checkpoint else "default"

    def _inside(self, eqn):
        traceback = getattr(eqn.source_info, "traceback", None) if eqn is not None else None
        return traceback is not None and id(traceback) in self.marked


# Effects that partial evaluation does not count as effects (its ``has_effects``).
QUIET_EFFECTS = tuple(
    getattr(jax_core, name)
    for name in ("NamedAxisEffect", "InternalMutableArrayEffect")
    if hasattr(jax_core, name)
)


def _effectful(eqn):
    """JAX keeps an effectful equation's outputs whatever the policy says."""
    return any(not isinstance(e, QUIET_EFFECTS) for e in eqn.effects)
