"""Qualified names of the JAX, Flax and Equinox objects that policies touch."""

from __future__ import annotations

from jax_lsp.core.record import Record


class CheckpointFunction(Record):
    __slots__ = ("qualname", "requires_function", "policy_position")
    qualname: str
    # Whether the wrapped function is a required first argument (so that
    # `@f(policy=p)` without it raises) or optional (the decorator form is valid).
    requires_function: bool
    # Index of `policy` when passed positionally; None when it is keyword-only.
    policy_position: int | None

    def __init__(self, qualname: str, requires_function: bool, policy_position: int | None) -> None:
        self._assign(qualname, requires_function, policy_position)


def _functions(
    names: list[str], requires_function: bool, policy_position: int | None
) -> dict[str, CheckpointFunction]:
    return {n: CheckpointFunction(n, requires_function, policy_position) for n in names}


CHECKPOINT_FUNCTIONS: dict[str, CheckpointFunction] = {
    **_functions(
        [
            "jax.checkpoint",
            "jax.remat",
            "jax.ad_checkpoint.checkpoint",
            "jax.ad_checkpoint.remat",
            "jax._src.ad_checkpoint.checkpoint",
            "jax._src.ad_checkpoint.remat",
        ],
        requires_function=True,
        policy_position=None,
    ),
    **_functions(
        [
            "flax.linen.remat",
            "flax.linen.checkpoint",
            "flax.linen.transforms.checkpoint",
            "flax.linen.transforms.remat",
            "flax.linen.partitioning.remat",
            "flax.core.lift.checkpoint",
            "flax.core.lift.remat",
        ],
        requires_function=True,
        policy_position=6,
    ),
    **_functions(
        ["flax.nnx.remat", "flax.nnx.transforms.autodiff.remat", "equinox.filter_checkpoint"],
        requires_function=False,
        policy_position=None,
    ),
}


class StaticArgnums(Record):
    """How a checkpoint function counts `static_argnums` (JAX117), checked under jax 0.10.2 and
    flax 0.12."""

    __slots__ = ("self_counted", "negative", "raises", "effect")
    # Of a Module class's `__call__`: whether `self` is argument 0 (None: functions only).
    self_counted: bool | None
    negative: bool  # whether negative indices count from the end of the call's arguments
    raises: bool  # whether an index out of range raises (else it is silently ignored)
    effect: str  # what happens to an index out of range

    def __init__(self, self_counted: bool | None, negative: bool, raises: bool, effect: str) -> None:
        self._assign(self_counted, negative, raises, effect)


_JAX_COUNTING = StaticArgnums(
    None, True, True, "JAX raises `ValueError` when the checkpointed function is called"
)
STATIC_ARGNUMS_COUNTING: dict[str, StaticArgnums] = {
    **{name: _JAX_COUNTING for name in CHECKPOINT_FUNCTIONS if name.startswith("jax.")},
    "flax.nnx.remat": _JAX_COUNTING,
    "flax.nnx.transforms.autodiff.remat": _JAX_COUNTING,
    **{
        name: StaticArgnums(
            True,
            False,
            True,
            "Flax passes it on to `jax.checkpoint`, shifted by its own arguments, which raises "
            "`ValueError` when the module is called",
        )
        for name in (
            "flax.linen.remat",
            "flax.linen.checkpoint",
            "flax.linen.transforms.checkpoint",
            "flax.linen.transforms.remat",
        )
    },
    "flax.linen.partitioning.remat": StaticArgnums(
        False,
        False,
        False,
        "`partitioning.remat` does not count `self`, and silently makes nothing static for an index "
        "out of range: the argument meant to be static is traced",
    ),
}


class FlagTestingLayer(Record):
    """A Flax layer whose call asks Python for the truth of a flag (JAX119: a traced flag raises
    there), checked under flax 0.12: the flag, taken by the layer or by its call, its position in
    the call, and the layer's parameter that, 0, skips the test (`if rate == 0.0 or deterministic`)."""

    __slots__ = ("flag", "call_position", "skipped_by")
    flag: str
    call_position: int | None  # None: the call takes it by keyword only
    skipped_by: str

    def __init__(self, flag: str, call_position: int | None, skipped_by: str) -> None:
        self._assign(flag, call_position, skipped_by)


_DROPOUT = FlagTestingLayer("deterministic", 1, "rate")
_NNX_DROPOUT = FlagTestingLayer("deterministic", None, "rate")  # its call takes the flag by keyword only
FLAG_TESTING_LAYERS = {
    "flax.linen.Dropout": _DROPOUT,
    "flax.linen.stochastic.Dropout": _DROPOUT,
    "flax.nnx.Dropout": _NNX_DROPOUT,
    "flax.nnx.nn.stochastic.Dropout": _NNX_DROPOUT,
}

# Transforms whose result calls the function they are given with the arguments it is called
# with (scanned or mapped axes sliced): JAX119 follows a checkpointed function through them.
FORWARDING_TRANSFORMS = frozenset(
    {
        *CHECKPOINT_FUNCTIONS,
        *(f"jax.{name}" for name in ("jit", "vmap", "pmap", "named_call")),
        *(f"flax.linen.{name}" for name in ("jit", "vmap", "scan")),
        *(f"flax.linen.transforms.{name}" for name in ("jit", "vmap", "scan")),
        *(f"flax.nnx.{name}" for name in ("jit", "vmap", "scan")),
        "equinox.filter_jit",
        "equinox.filter_vmap",
    }
)


class LiftedArguments(Record):
    """How a Flax lifted transform of a `Module` class (or of a function taking the module first)
    hands the arguments of its result's call on (JAX119), as flax 0.12.8 does
    (tests/rules/test_jax119_lifted.py). Flax counts the module as argument 0, as its `remat`
    does. An argument on a scanned or mapped axis (an integer `in_axes`, 0 by default), or the
    loop's carry, arrives as a slice of an array, traced whatever the checkpoint's
    `static_argnums` says (`nn.broadcast`, or `None` for `vmap`, hands it on as it is); one that
    `jit`'s `static_argnums`/`static_argnames` does not name arrives traced; `scan` and `vmap`
    drop keyword arguments (with a `RuntimeWarning`): their parameters keep their defaults."""

    __slots__ = ("axes_position", "carried", "static_position", "drops_keywords")
    axes_position: int | None  # where `in_axes` is in the transform's call; None: it has none
    carried: int  # the arguments after the module that the loop carries, before the axes' first
    static_position: int | None  # where `static_argnums` is (`static_argnames` follows it)
    drops_keywords: bool

    def __init__(
        self, axes_position: int | None, carried: int, static_position: int | None, drops_keywords: bool
    ) -> None:
        self._assign(axes_position, carried, static_position, drops_keywords)


_LINEN_LIFTED = {
    "scan": LiftedArguments(5, 1, None, True),
    "vmap": LiftedArguments(3, 0, None, True),
    "jit": LiftedArguments(None, 0, 3, False),
}
# `jax.vmap`/`jax.jit` and nnx's transforms are followed as handing every argument on as it is.
LIFTED_TRANSFORMS = {
    f"{package}.{name}": lifted
    for package in ("flax.linen", "flax.linen.transforms")
    for name, lifted in _LINEN_LIFTED.items()
}


class LoopCall(Record):
    """A JAX loop that calls the function it is given with arguments of its own (JAX119: a
    parameter past them keeps its default): where the function is given, and how many
    positional arguments each call passes it."""

    __slots__ = ("function_position", "passes")
    function_position: int
    passes: int

    def __init__(self, function_position: int, passes: int) -> None:
        self._assign(function_position, passes)


LOOP_CALLS = {
    "jax.lax.scan": LoopCall(0, 2),  # f(carry, x)
    "jax.lax.map": LoopCall(0, 1),  # f(x)
    "jax.lax.fori_loop": LoopCall(2, 2),  # body_fun(i, val)
    "jax.lax.while_loop": LoopCall(1, 1),  # body_fun(val)
}

# The names they are called by: `checkpoint`, `remat`, `filter_checkpoint`.
CHECKPOINT_FUNCTION_NAMES = frozenset(name.rsplit(".", 1)[1] for name in CHECKPOINT_FUNCTIONS)

PARTIAL = {"functools.partial"}

POLICY_NAMESPACES = (
    "jax.checkpoint_policies.",
    "jax.ad_checkpoint.checkpoint_policies.",
    "jax._src.ad_checkpoint.",
)


class ReadyMadePolicy(Record):
    """A member of `jax.checkpoint_policies` that is a policy itself, passed uncalled."""

    __slots__ = ("name", "does", "decision", "called")
    name: str
    does: str  # what it saves, for hovers
    # The constant decision it stands for (`False` for nothing_saveable), when it has one.
    decision: str | None
    # What calling it with no arguments does (JAX106); None: it raises at once.
    called: str | None

    def __init__(self, name: str, does: str, decision: str | None = None, called: str | None = None) -> None:
        self._assign(name, does, decision, called)


class PolicyFactory(Record):
    """A member of `jax.checkpoint_policies` that makes a policy when called."""

    __slots__ = ("name", "does", "takes", "decides_with", "offload_parameters", "hashes_names")
    name: str
    does: str  # what its policies save, for hovers
    takes: str  # what it must be called with (JAX107, JAX111)
    # What its policies return when that is not a bool (JAX110); None: plain bools.
    decides_with: str | None
    # (parameter names, how many may be passed positionally) of the memory kinds it offloads
    # between (JAX105); None when it does not offload.
    offload_parameters: tuple[tuple[str, ...], int] | None
    # Whether it takes names as `*names` and makes a frozenset of them (JAX116): a tuple given
    # as one name is one member that no tag carries, a list raises `unhashable type` at once.
    hashes_names: bool

    def __init__(
        self,
        name: str,
        does: str,
        takes: str,
        decides_with: str | None = None,
        offload_parameters: tuple[tuple[str, ...], int] | None = None,
        hashes_names: bool = False,
    ) -> None:
        self._assign(name, does, takes, decides_with, offload_parameters, hashes_names)


def _by_name(*members: ReadyMadePolicy) -> dict[str, ReadyMadePolicy]:
    return {member.name: member for member in members}


# The one catalogue of `jax.checkpoint_policies`: the rules and the hover read it.
READY_MADE_POLICIES = _by_name(
    ReadyMadePolicy(
        "everything_saveable",
        "saves every intermediate value (no recomputation, most memory)",
        decision="True",
        called="returns `True`, which JAX then calls as the policy: "
        "`TypeError: 'bool' object is not callable` at the first grad",
    ),
    ReadyMadePolicy(
        "nothing_saveable",
        "saves nothing: every intermediate is recomputed in the backward pass",
        decision="False",
        called="returns `False`, which works only because JAX reads a false policy as 'save nothing'",
    ),
    ReadyMadePolicy(
        "dots_saveable", "saves the results of matrix multiplications (`dot_general`), recomputes the rest"
    ),
    ReadyMadePolicy("checkpoint_dots", "same as `dots_saveable`"),
    ReadyMadePolicy(
        "dots_with_no_batch_dims_saveable", "saves `dot_general` results that have no batch dimensions"
    ),
    ReadyMadePolicy("checkpoint_dots_with_no_batch_dims", "same as `dots_with_no_batch_dims_saveable`"),
)

POLICY_FACTORIES = {
    factory.name: factory
    for factory in (
        PolicyFactory(
            "save_only_these_names",
            "saves only values tagged with `checkpoint_name` under the given names",
            'names of values tagged with `checkpoint_name`, e.g. `save_only_these_names("attn_out")`',
            hashes_names=True,
        ),
        PolicyFactory(
            "save_any_names_but_these",
            "saves every named value except the given names",
            'the names it must not save, e.g. `save_any_names_but_these("big")`',
            hashes_names=True,
        ),
        PolicyFactory(  # in jax 0.10.2 and 0.12 it ignores its names: not hashes_names
            "save_anything_except_these_names",
            "saves everything except values tagged with the given names",
            'the names it must not save, e.g. `save_anything_except_these_names("big")`',
        ),
        PolicyFactory(
            "save_from_both_policies",
            "saves what either of two policies saves (both must return plain bools)",
            "two policies, e.g. `save_from_both_policies(dots_saveable, my_policy)`",
        ),
        PolicyFactory(
            "offload_dot_with_no_batch_dims",
            "offloads `dot_general` results without batch dims to another memory",
            'the memory kinds, e.g. `offload_dot_with_no_batch_dims("device", "pinned_host")`',
            decides_with="`Offloadable(...)` or `Recompute`",
            offload_parameters=(("offload_src", "offload_dst"), 2),
        ),
        PolicyFactory(
            "save_and_offload_only_these_names",
            "saves some named values and offloads others to host memory",
            "keyword arguments `names_which_can_be_saved=[...], names_which_can_be_offloaded=[...], "
            'offload_src="device", offload_dst="pinned_host"`',
            decides_with="`Saveable`, `Offloadable(...)` or `Recompute`",
            offload_parameters=(
                ("names_which_can_be_saved", "names_which_can_be_offloaded", "offload_src", "offload_dst"),
                0,  # keyword-only
            ),
        ),
    )
}

SAVE_FROM_BOTH = "save_from_both_policies"

_PE = ("jax.ad_checkpoint.", "jax._src.interpreters.partial_eval.", "jax.interpreters.partial_eval.")
OFFLOADABLE = {p + "Offloadable" for p in _PE}
SAVEABLE = {p + "Saveable" for p in _PE}
RECOMPUTE = {p + "Recompute" for p in _PE}

# Memory kinds JAX maps; everything else silently means device memory.
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
OFFLOAD_SOURCE = "device"
OFFLOAD_DESTINATION = "pinned_host"

NUMPY_MODULES = ("numpy.", "jax.numpy.")
# NumPy/jax.numpy functions that return NumPy scalars or arrays, never a Python bool/int.
# (np.size, np.ndim, np.shape, np.isscalar, np.allclose... return Python values: not listed.)
NUMPY_VALUED_FUNCTIONS = {
    "prod",
    "product",
    "sum",
    "any",
    "all",
    "max",
    "min",
    "amax",
    "amin",
    "mean",
    "count_nonzero",
    "bool_",
    "array",
    "asarray",
    "isin",
    "isclose",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "cumprod",
    "cumsum",
    "dot",
    "abs",
    "floor",
    "ceil",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint32",
    "float16",
    "float32",
    "float64",
    "bool",
    "sqrt",
    "log2",
    "median",
    "argmax",
    "argmin",
}


def policy_member(qualname: str | None) -> str | None:
    """`jax.checkpoint_policies.dots_saveable` -> `dots_saveable`; None for anything else."""
    if not qualname:
        return None
    for prefix in POLICY_NAMESPACES:
        if qualname.startswith(prefix):
            member = qualname[len(prefix) :]
            if member in READY_MADE_POLICIES or member in POLICY_FACTORIES:
                return member
    return None
