"""The training step of one candidate (the example's ``grad``) and its memory: estimated from
the traced step, or measured by compiling it.

The estimate walks the step's jaxpr (forward and backward in one, as ``jit(grad)`` compiles it)
in order and keeps a value alive from the equation that makes it to the last one that reads
it. Its peak is the largest sum of live device bytes, counting neither the arguments nor the
step's outputs (the gradients), as XLA's ``temp`` figure does not. A nested jaxpr (a scan's
body, a ``checkpoint``, a ``cond``'s branches, a ``jit``) adds its own peak to what is live
around it while it runs: a scan's stacked residuals are live, its body's working set counts
once, for one iteration. On the CPU backend a loop's bfloat16 inputs are also held as float32
copies while it runs (`_widened`), as XLA:CPU compiles them. Inside a loop's body the steps of an
elementwise chain that XLA computes inside their readers' fusions are not held (`_fused`), and on
the CPU backend a bfloat16 matmul's operands and output are held in float32 (`_dot_widened`).
"""

from __future__ import annotations

import contextlib
import functools
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax._src import core as jax_core

from . import kept
from .example import short_error
from .jaxpr import consts_of, eqn_jaxprs, open_jaxpr, scan_counts
from .placement import context_mesh, placed_step
from .residuals import device_bytes
from .step_cost import cost_of
from .target import exhausted, memory_of, placement_for


def differentiated(leaves, positional):
    """The indices of the leaves the step differentiates: the first ``positional`` that are
    floating point."""
    return [i for i in range(positional) if jnp.issubdtype(leaves[i].dtype, jnp.inexact)]


def backward(vjp_fn, out):
    """The gradients ``vjp_fn`` gives for cotangents of ones on the outputs ``out``."""
    return vjp_fn(_ones(out))


def _ones(out):
    return [jnp.ones_like(o) for o in out]


def backward_jaxpr(vjp_fn, out):
    """The backward pass of ``vjp_fn`` (``jax.vjp``'s function of the outputs ``out``) as JAX
    traces it: a closed jaxpr of the cotangents, the residuals its consts."""
    return jax.make_jaxpr(vjp_fn)(_ones(out))


def run_backward(pulled, out):
    """The gradients the backward pass ``pulled`` (`backward_jaxpr`) gives for cotangents of ones,
    its equations traced again where the call is made."""
    return jax_core.eval_jaxpr(open_jaxpr(pulled), consts_of(pulled), *_ones(out))


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


def _scan_invariant(eqn):
    """A scan's consts and the stacked inputs it slices."""
    counts = scan_counts(eqn)
    if counts is None:  # a release whose scan this does not know: counted as traced
        return []
    consts, carry = counts
    return [*eqn.invars[:consts], *eqn.invars[consts + carry :]]


def _while_invariant(eqn):
    """A while loop's consts (its condition's, then its body's)."""
    return eqn.invars[: eqn.params["cond_nconsts"] + eqn.params["body_nconsts"]]


# The inputs of a loop equation that are the same in every iteration, by its primitive's name.
LOOP_INVARIANTS = {"scan": _scan_invariant, "while": _while_invariant}


def _widened(eqn):
    """The bfloat16 inputs that XLA:CPU holds as float32 copies while the loop ``eqn`` runs.
    XLA:CPU has no bfloat16 arithmetic or slicing: its float-normalization pass widens their
    operands to float32, and while-loop-invariant code motion then hoists the widening of an
    input that every iteration reads (a stacked one as a whole) out of the loop. Float16 keeps
    its width there (only a dot widens it)."""
    return list(
        dict.fromkeys(
            var
            for var in LOOP_INVARIANTS[eqn.primitive.name](eqn)
            if not isinstance(var, jax_core.Literal) and getattr(var.aval, "dtype", None) == jnp.bfloat16
        )
    )


def _passed_in(eqn, sub):
    """(input of ``eqn``, invar of its jaxpr ``sub`` that receives it): a scan's in order (its
    stacked inputs sliced), else the trailing ones of the same type (a call's, a cond branch's,
    a while body's)."""
    if eqn.primitive.name == "scan":
        pairs = zip(eqn.invars, sub.invars)
    else:
        pairs = ((o, i) for o, i in zip(reversed(eqn.invars), reversed(sub.invars)) if o.aval == i.aval)
    return [(o, i) for o, i in pairs if not isinstance(o, jax_core.Literal)]


@functools.cache
def local_backend_is_cpu():
    """Whether the local backend is XLA:CPU. Asking starts JAX's backend: never before a fork."""
    return jax.default_backend() == "cpu"


# Primitives XLA computes inside the fusion of their readers (loop fusion) where every reader is
# itself fused: elementwise arithmetic, comparisons, casts and broadcasts, by name.
ELEMENTWISE = frozenset(
    """abs add add_any and atan2 broadcast_in_dim cbrt ceil clamp convert_element_type copy copy_p
    cos div eq erf erf_inv erfc exp exp2 expm1 floor ge gt integer_pow iota is_finite le log log1p
    logistic lt max min mul ne neg nextafter not or pow rem round rsqrt select_n sign sin sqrt square
    sub tan tanh xor""".split()
    + ["one_minus_square"]  # tanh's derivative: one primitive in JAX 0.12, sub and mul in 0.10
)
# What reads an elementwise value inside its own fusion: another elementwise step, a view, a reduction.
FUSED_READERS = (
    ELEMENTWISE
    | frozenset(VIEWS)
    | {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "argmax", "argmin"}
)
# Nested jaxprs whose values XLA does not fuse with those around them: loops, and the step's
# checkpointed regions (what the candidate policy decides).
KEPT_APART = frozenset({*LOOP_INVARIANTS, "checkpoint", "remat"})
# The steps whose values XLA computes inside their readers' fusions in a loop's body: the
# `ELEMENTWISE` ones but a broadcast, which XLA:CPU's library fusions (a matmul, a reduction, with
# what they read) take as a held array: a llama block's attention scale and softmax denominators.
LOOP_FUSED_MAKERS = ELEMENTWISE - {"broadcast_in_dim"}
# The elementwise steps XLA does not copy into more than one fusion (its `IsExpensive`): a value one
# of them makes that two equations read is held.
EXPENSIVE = frozenset(
    "atan2 cbrt div erf erf_inv erfc exp exp2 expm1 log log1p logistic pow rem rsqrt sqrt tanh".split()
)


class Peak(NamedTuple):
    """The estimated temporaries at the step's peak, and how many of those bytes are `fusible`."""

    bytes: int
    fusible: int  # values that XLA may fuse into their readers and never hold (`_fusible`)


def _owners(jaxpr):
    """The `VIEWS` values of ``jaxpr``, each the value whose buffer it is."""
    owner = {}
    for eqn in jaxpr.eqns:
        if (
            eqn.primitive.name in VIEWS
            and len(eqn.invars) == 1
            and not isinstance(eqn.invars[0], jax_core.Literal)
        ):
            owner[eqn.outvars[0]] = owner.get(eqn.invars[0], eqn.invars[0])
    return owner


def _readers(jaxpr, owner):
    """The equations of ``jaxpr`` that read each value (a `VIEWS` value's readers its owner's)."""
    readers = {}
    for eqn in jaxpr.eqns:
        for var in eqn.invars:
            if not isinstance(var, jax_core.Literal):
                readers.setdefault(owner.get(var, var), []).append(eqn)
    return readers


def _fusible(jaxpr, readers, outside):
    """The values of ``jaxpr`` (outside any loop or checkpoint) that an `ELEMENTWISE` equation makes
    and only `FUSED_READERS` read: the steps of an elementwise chain, which XLA computes where
    they are read without holding them, where the estimate counts each."""
    return {
        var
        for eqn in jaxpr.eqns
        if eqn.primitive.name in ELEMENTWISE
        for var in eqn.outvars
        if var not in outside
        and var in readers
        and all(r.primitive.name in FUSED_READERS for r in readers[var])
    }


def _fused(jaxpr, readers, outside):
    """The values of a loop's body ``jaxpr`` that XLA computes inside the fusions of their readers
    and never holds: the `_fusible` ones a `LOOP_FUSED_MAKERS` step makes, unless that step is
    `EXPENSIVE` and its readers end in more than one held value (XLA copies a cheap step into
    each fusion that reads it, never an expensive one)."""
    fusible = _fusible(jaxpr, readers, outside)
    fused, ends = set(), {}
    for eqn in reversed(jaxpr.eqns):
        for var in eqn.outvars:
            if var not in fusible or eqn.primitive.name not in LOOP_FUSED_MAKERS:
                continue
            into = {
                end
                for reader in readers[var]
                if reader.primitive.name not in VIEWS
                for out in reader.outvars
                for end in (ends[out] if out in fused else {out})
            }
            if eqn.primitive.name not in EXPENSIVE or len(into) <= 1:
                fused.add(var)
                ends[var] = into
    return fused


def _dot_widened(jaxpr, owner, outside):
    """The bfloat16 values of a loop's body ``jaxpr`` that a matmul makes or reads, which XLA:CPU
    holds in float32: it has no bfloat16 matmul, and widens their operands and output."""
    return {
        owner.get(var, var)
        for eqn in jaxpr.eqns
        if eqn.primitive.name == "dot_general"
        for var in (*eqn.invars, *eqn.outvars)
        if not isinstance(var, jax_core.Literal)
        and getattr(var.aval, "dtype", None) == jnp.bfloat16
        and owner.get(var, var) not in outside
    }


def _last_reads(jaxpr, owner, fused):
    """The index of the equation of ``jaxpr`` that last reads each value; a `_fused` value's
    operands are read where it is last read (inside its readers' fusions)."""
    last = {}
    for index, eqn in enumerate(jaxpr.eqns):
        for var in eqn.invars:
            if not isinstance(var, jax_core.Literal):
                last[owner.get(var, var)] = index
    for eqn in reversed(jaxpr.eqns):
        if eqn.outvars[0] in fused:
            for var in eqn.invars:
                if not isinstance(var, jax_core.Literal):
                    operand = owner.get(var, var)
                    last[operand] = max(last[operand], last[eqn.outvars[0]])
    return last


def _inner(eqn, widened, wide, owner, on_cpu, sizes, in_loop):
    """The largest `Peak` of the jaxprs nested in ``eqn`` while it runs (none: zero), counting
    fusible bytes only in what is not `KEPT_APART`. ``widened``, ``wide``: as `_peak` has them."""
    subs = eqn_jaxprs(eqn)
    inner = Peak(0, 0)
    if not subs:
        return inner
    inputs = [v for v in eqn.invars if not isinstance(v, jax_core.Literal)]
    float32 = {*widened, *(v for v in inputs if owner.get(v, v) in wide)}
    for sub in subs:
        held = frozenset(i for o, i in _passed_in(eqn, sub) if o in float32)
        inside = in_loop or eqn.primitive.name in LOOP_INVARIANTS
        found = _peak(sub, {*sub.invars, *sub.constvars, *sub.outvars}, on_cpu, held, sizes, inside)
        inner = max(inner, found)
    return inner._replace(fusible=0) if eqn.primitive.name in KEPT_APART else inner


def _peak(jaxpr, outside, on_cpu, wide=frozenset(), sizes=None, in_loop=False):
    """The `Peak` of the values ``jaxpr`` makes: the largest sum of their live device bytes, not
    counting those in ``outside`` (its inputs and outputs, held by whoever runs it). A `VIEWS`
    value is its operand's buffer (a bitcast, or a layout XLA gives the operand). Where
    ``on_cpu()`` (asked of a loop with `_widened` inputs), those are copied to float32 one
    after another before the loop starts, each freed once copied if nothing later reads it; the
    copies live while it runs. ``wide``: the invars of ``jaxpr`` already held in float32 by an
    enclosing loop (XLA hoists a copy out of every loop it is invariant in). ``sizes``: the
    device bytes of each aval met so far, by its id (the walk's avals live as long as it).
    ``in_loop``: whether ``jaxpr`` runs in a loop's body, where its `_fused` values are not held
    and, where ``on_cpu()`` (asked of a body with a bfloat16 matmul), its `_dot_widened` ones are
    held twice their size."""
    sizes = {} if sizes is None else sizes

    def size(var):
        aval = var.aval
        found = sizes.get(id(aval))
        if found is None:
            found = sizes[id(aval)] = device_bytes(aval)
        return found

    owner = _owners(jaxpr)
    outside = {*outside, *(owner[v] for v in outside if v in owner)}
    readers = _readers(jaxpr, owner)
    fusible = _fusible(jaxpr, readers, outside)
    fused = _fused(jaxpr, readers, outside) if in_loop else set()
    last = _last_reads(jaxpr, owner, fused)
    doubled = _dot_widened(jaxpr, owner, outside) if in_loop else set()
    doubled = doubled if doubled and on_cpu() else set()

    def held(var):
        return 2 * size(var) if var in doubled else size(var)

    live, live_fusible, peak = 0, 0, Peak(0, 0)
    dying = {}
    for index, eqn in enumerate(jaxpr.eqns):
        made = [v for v in eqn.outvars if v not in owner and v not in outside and v not in fused]
        loop = eqn.primitive.name in LOOP_INVARIANTS
        widened = [v for v in _widened(eqn) if owner.get(v, v) not in wide] if loop else []
        widened = widened if widened and on_cpu() else []
        inner = _inner(eqn, widened, wide, owner, on_cpu, sizes, in_loop)
        for var in made:
            live += held(var)
            live_fusible += size(var) if var in fusible else 0
        if widened:
            copies = sum(2 * size(v) for v in widened)
            freed = [
                size(v)
                for v in {owner.get(v, v) for v in widened}
                if v not in outside and last.get(v) == index
            ]
            # at the last copy the largest original may still be there (the order is XLA's)
            here = live - sum(freed) + copies + max(inner.bytes, *freed, 0)
        else:
            here = live + inner.bytes
        if here > peak.bytes:
            peak = Peak(here, live_fusible + inner.fusible)
        for var in made:
            dying.setdefault(last.get(var, index), []).append(var)
        for var in dying.pop(index, ()):
            live -= held(var)
            live_fusible -= size(var) if var in fusible else 0
    return peak


def estimate_peak(step, leaves, on_cpu=local_backend_is_cpu):
    """The step's temporary device bytes at its peak, from its traced jaxpr; never compiles."""
    return step_peak(step, leaves, on_cpu).bytes


def step_peak(step, leaves, on_cpu=local_backend_is_cpu):
    """The `Peak` of the step, from its traced jaxpr; never compiles."""
    return jaxpr_step_peak(open_jaxpr(jax.make_jaxpr(step)(*leaves)), on_cpu)


def jaxpr_peak(jaxpr, on_cpu=local_backend_is_cpu):
    """The temporary device bytes at the peak of the step traced as ``jaxpr``. ``on_cpu()``:
    whether XLA:CPU compiles the step, asked only of a step with a `_widened` loop input
    or a bfloat16 matmul in a loop."""
    return jaxpr_step_peak(jaxpr, on_cpu).bytes


def jaxpr_step_peak(jaxpr, on_cpu=local_backend_is_cpu):
    """The `Peak` of the step traced as ``jaxpr`` (``on_cpu`` as `jaxpr_peak` takes it)."""
    jaxpr = _used(jaxpr)
    return _peak(jaxpr, {*jaxpr.invars, *jaxpr.constvars, *jaxpr.outvars}, on_cpu)


NO_PEAK = {"peak_bytes": None, "peak_fusible_bytes": None}  # an entry's, where there is no estimate


def peak_entry(estimate, *args):
    """The answer entry's ``peak_bytes`` and ``peak_fusible_bytes`` (of those, what `_fusible`
    values make) from ``estimate(*args)`` (`step_peak` or `jaxpr_step_peak`); both None where
    tracing or walking the step fails."""
    try:
        peak = estimate(*args)
    except MemoryError:
        raise
    except Exception:
        return NO_PEAK
    return {"peak_bytes": peak.bytes, "peak_fusible_bytes": peak.fusible}


def compile_step(step, leaves, target=None, keep=None):
    """``memory_analysis()`` of ``jit(step)`` compiled for ``target`` (the request's: a TPU
    topology, `target.py`) or, without one, the local device, with its ``cost`` (`step_cost`:
    the work and bytes of the program as it runs, loops counted); for a target, how the arguments
    were placed (``sharding``: ``"replicated"`` or ``"example"``; ``placement``: what to say of
    it, `Placement.note`); and the seconds lowering and compiling took. ``keep``: a path where the
    executable is kept for the run on the device (`kept.keep`, not counted in the seconds)."""
    started = time.perf_counter()
    placement, context = None, contextlib.nullcontext()
    traced_step, traced_leaves = step, leaves
    if target:
        placement = placement_for(target)
        step, leaves = placed_step(step, leaves, placement)
        context = context_mesh(placement)
    with context:
        executable = jax.jit(step).lower(*leaves).compile()
    compiled = memory_of(executable)
    compiled["cost"] = cost_of(executable)
    if placement is not None:
        compiled["sharding"] = placement.sharding_kind
        compiled["placement"] = placement.note()
    seconds = time.perf_counter() - started
    if keep is not None:
        kept.keep(keep, executable, traced_step, traced_leaves)
    return compiled, seconds


def compiled_memory(step, leaves, peak, target=None, keep=None):
    """The answer entry's ``compiled``, ``compile_s`` and ``estimate_error`` (the estimated
    ``peak``'s error against the compiled temporaries, a signed fraction); ``exhausted``
    (`target.exhausted`) for a step larger than the target's memory, else ``compile_error``
    for a step that does not compile."""
    started = time.perf_counter()
    try:
        compiled, seconds = compile_step(step, leaves, target, keep)
    except MemoryError:
        raise
    except Exception as exc:
        over = exhausted(exc)
        if over is not None:
            return {"compiled": None, "exhausted": over, "compile_s": time.perf_counter() - started}
        return {"compiled": None, "compile_error": short_error(exc)}
    temp = compiled["temp_bytes"]
    error = (peak - temp) / temp if peak is not None and temp else None
    return {"compiled": compiled, "compile_s": seconds, "estimate_error": error}
