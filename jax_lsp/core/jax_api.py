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
# The names they are called by: `checkpoint`, `remat`, `filter_checkpoint`.
CHECKPOINT_FUNCTION_NAMES = frozenset(name.rsplit(".", 1)[1] for name in CHECKPOINT_FUNCTIONS)

PARTIAL = {"functools.partial"}

POLICY_NAMESPACES = (
    "jax.checkpoint_policies.",
    "jax.ad_checkpoint.checkpoint_policies.",
    "jax._src.ad_checkpoint.",
)

READY_MADE_POLICIES = {
    "everything_saveable",
    "nothing_saveable",
    "dots_saveable",
    "checkpoint_dots",
    "dots_with_no_batch_dims_saveable",
    "checkpoint_dots_with_no_batch_dims",
}

POLICY_FACTORIES = {
    "save_only_these_names": 'names of values tagged with `checkpoint_name`, e.g. `save_only_these_names("attn_out")`',
    "save_any_names_but_these": 'the names it must not save, e.g. `save_any_names_but_these("big")`',
    "save_anything_except_these_names": 'the names it must not save, e.g. `save_anything_except_these_names("big")`',
    "save_from_both_policies": "two policies, e.g. `save_from_both_policies(dots_saveable, my_policy)`",
    "offload_dot_with_no_batch_dims": 'the memory kinds, e.g. `offload_dot_with_no_batch_dims("device", "pinned_host")`',
    "save_and_offload_only_these_names": (
        "keyword arguments `names_which_can_be_saved=[...], names_which_can_be_offloaded=[...], "
        'offload_src="device", offload_dst="pinned_host"`'
    ),
}

SAVE_FROM_BOTH = "save_from_both_policies"

# Factories whose policies decide with Saveable/Recompute/Offloadable, not bools: what they return.
NON_BOOL_FACTORIES = {
    "save_and_offload_only_these_names": "`Saveable`, `Offloadable(...)` or `Recompute`",
    "offload_dot_with_no_batch_dims": "`Offloadable(...)` or `Recompute`",
}

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
