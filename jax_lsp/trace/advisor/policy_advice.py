"""What one candidate policy keeps at a site (`PolicyAdvice`) and what it is made of: its
residuals (`Residual`, grouped as a loop's layers by `groups`), the key that selects it (`Select`,
and the site's `Selector` and `Setting`), the names that change nothing (`NoEffect`); and the
candidates a budget's check compiled (`FitCheck`). `Advice` (advice.py) holds them for a site;
`contract.py` writes them as JSON and reads them back. Sizes are bytes; lines are 1-based.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from jax_lsp.trace.advisor.compiled import Compiled, Exhausted
from jax_lsp.trace.advisor.runs import StepRun

NAME_BASED = ("save_only_these_names", "save_and_offload_only_these_names")
KINDS = ("argument", "constant", "literal", "computed")  # a residual's origin, as JAX words it
# Why a residual is kept, decided by the agent from the trace (docs/advise.md), in words.
REASONS = {
    "argument": "an argument",  # of the checkpointed function or of the step
    "named": "saved by name",
    "policy": "saved by the policy",
    "offloaded": "offloaded by the policy",
    "default": "kept whatever the policy",
}
_SHORT_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "int32": "i32"}


@dataclass(frozen=True)
class Residual:
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    memory: str  # "device" | "host"
    kind: str  # "argument" | "constant" | "literal" | "computed": as JAX describes where it is from
    name: str | None  # the checkpoint_name, if any
    path: str | None  # the user's file and line that produced it (None for an argument)
    line: int | None
    iterations: int | None  # stacked by a scan of this many iterations
    description: str  # JAX's own words: "from the argument x", "named 'h'", "output of sin"
    reason: str | None = None  # why it is kept: a key of REASONS (None from an older agent)
    used_by: tuple[tuple[str, int], ...] | None = None  # the backward pass's lines that read it

    @property
    def made_on_a_line(self) -> bool:
        return self.path is not None and self.line is not None

    @property
    def label(self) -> str:
        """``bf16[8,2048,4096]``, as JAX prints an aval."""
        dims = ",".join(str(d) for d in self.shape)
        return f"{_SHORT_DTYPES.get(self.dtype, self.dtype)}[{dims}]"

    @property
    def held_anyway(self) -> bool:
        """An argument, a constant or a literal: the step holds it whatever the policy."""
        return self.kind != "computed"


def groups(residuals: Sequence[Residual]) -> list[int | None]:
    """Each residual's ``group``: residuals made on the same line and equal in everything else (a
    Python loop's iterations) are one group, named by the index of its first member; None for a
    residual with no other member."""
    first: dict[Residual, int] = {}
    for index, residual in enumerate(residuals):
        if residual.made_on_a_line:
            first.setdefault(residual, index)
    sizes = Counter(first[r] for r in residuals if r.made_on_a_line)
    return [first[r] if r.made_on_a_line and sizes[first[r]] > 1 else None for r in residuals]


def grouped(residuals: Sequence[Residual]) -> list[tuple[Residual, int]]:
    """Each group once (`groups`), with its number of members, in order of first appearance."""
    found = groups(residuals)
    sizes = Counter(g for g in found if g is not None)
    return [
        (r, sizes[g] if g is not None else 1)
        for i, (r, g) in enumerate(zip(residuals, found))
        if g in (None, i)
    ]


@dataclass(frozen=True)
class Select:
    """The key that selects a policy where the site's policy is chosen by a key."""

    key: str | int  # e.g. "checkpoint_dots"
    expression: str  # the key as written at the site, e.g. "self.config.remat_policy"

    @property
    def name(self) -> str:
        """What a user sets: ``remat_policy`` for ``self.config.remat_policy``."""
        return setting_name(self.expression) or self.expression


@dataclass(frozen=True)
class Selector:
    """How the site's policy is chosen: the key as written, the key its example used, the keys."""

    expression: str
    current: str | int | None
    keys: tuple[str | int, ...]


@dataclass(frozen=True)
class Setting:
    """The one literal in the project that sets the site's key by default (`setting.py`)."""

    path: str
    line: int  # 1-based
    column: int  # 0-based code points, the literal's start
    end_column: int
    text: str  # the literal as written, e.g. "'nothing_saveable'"


def setting_name(expression: str) -> str | None:
    """The name a key expression reads: ``remat_policy`` in ``self.config.remat_policy``,
    ``remat`` in ``cfg["remat"]``; None for anything else."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    return None


@dataclass(frozen=True)
class NoEffect:
    """A name the current policy lists that changes nothing: the policy without it keeps the same
    residuals and recomputes the same, as the agent traced."""

    name: str
    role: str  # "saved" | "offloaded" | "excluded": the list of the policy that names it
    reason: str  # a key of report.NO_EFFECT_REASONS
    tagged_outside: tuple[tuple[str, int], ...]  # (path, line) of its tags outside the checkpoint
    without: str | None  # the site's policy= value without the name, checked to keep the same


@dataclass(frozen=True)
class PolicyAdvice:
    policy: str  # a Python expression, e.g. "jax.checkpoint_policies.dots_saveable"
    current: bool
    device_bytes: int  # every residual on the device: argument_bytes + computed_bytes
    host_bytes: int
    recompute_flops: int | None  # None: not countable on this JAX release
    residuals: tuple[Residual, ...]
    error: str | None = None  # JAX or the policy raised under this policy: no numbers then
    select: Select | None = None  # the key that selects it, where a key chooses the site's policy
    peak_bytes: int | None = None  # the step's temporaries at their peak, estimated from its trace
    # of those, elementwise values outside the step's loops and checkpoints that only elementwise
    # steps and reductions read: XLA may fuse them into their readers and never hold them
    peak_fusible_bytes: int | None = None
    compiled: Compiled | None = None  # with --compile: the compiled step's memory_analysis()
    compile_s: float | None = None
    compile_error: str | None = None  # with --compile: the step did not compile
    exhausted: Exhausted | None = None  # with --compile: the step is larger than the target's memory
    compile_stopped: str | None = None  # and its process was stopped: "memory", "timeout", "crashed"
    run: StepRun | None = None  # with --run: the step run on the local device

    @property
    def was_compiled(self) -> bool:
        """--compile was asked for (whether or not the step compiled)."""
        return self.compiled is not None or self.compile_error is not None or self.exhausted is not None

    @property
    def estimate_error(self) -> float | None:
        """``peak_bytes`` against the compiled temporaries, a signed fraction (+0.1: 10% over)."""
        if self.compiled is None or self.peak_bytes is None or not self.compiled.temp_bytes:
            return None
        return (self.peak_bytes - self.compiled.temp_bytes) / self.compiled.temp_bytes

    no_effect: tuple[NoEffect, ...] = ()  # the current policy's names that change nothing

    @property
    def kept(self) -> tuple[tuple[tuple[int, ...], str, str], ...] | None:
        """What "the same residuals" compares: each residual's shape, dtype and memory, in any
        order; None for a candidate JAX rejected."""
        if self.error is not None:
            return None
        return tuple(sorted((r.shape, r.dtype, r.memory) for r in self.residuals))

    @property
    def name_based(self) -> bool:
        return any(f".{name}(" in self.policy or self.policy.startswith(name + "(") for name in NAME_BASED)

    @property
    def jax_policy(self) -> bool:
        """One of `jax.checkpoint_policies` or made by its factories: under JAX's new remat
        (`jax_remat3`) it still takes effect, where a custom callable saves nothing."""
        return self.policy.startswith("jax.checkpoint_policies.") or self.name_based

    @property
    def argument_bytes(self) -> int:
        """The device residuals the step holds whatever the policy: arguments, constants, literals."""
        return sum(r.bytes for r in self.residuals if r.memory == "device" and r.held_anyway)

    @property
    def computed_bytes(self) -> int:
        """The device residuals the policy makes the step keep: values computed in the forward pass."""
        return sum(r.bytes for r in self.residuals if r.memory == "device" and not r.held_anyway)


@dataclass(frozen=True)
class FitCheck:
    """The candidates a budget's suggestion depended on, compiled before suggesting (`fit.py`)."""

    policies: tuple[str, ...]
    seconds: float  # the wall time of advising them again, compiling
