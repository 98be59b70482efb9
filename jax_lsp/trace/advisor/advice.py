"""The advisor's answer: what each policy keeps at one site, as an `Advice`.

`Advice.from_agent` reads the trace agent's answer to an ``advise`` request; `to_contract()` is
the JSON of `jax-lsp advise --output-format json` (docs/advise.md). Sizes are bytes (`sizes.py`
reads and writes them for people). Lines are 1-based, as Python numbers them.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor import runs, step_time
from jax_lsp.trace.advisor.compiled import Compiled, Exhausted, read_compiled, read_exhausted
from jax_lsp.trace.advisor.runs import DeviceRuns, StepRun, read_device_runs, read_step_run
from jax_lsp.trace.advisor.user_call import UserCall, read_user_call
from jax_lsp.trace.compile_target import CompileTarget, CompileTargetError, parse_target
from jax_lsp.trace.result import TraceResult

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

    def to_json(self, root: Path | None) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "bytes": self.bytes,
            "memory": self.memory,
            "kind": self.kind,
            "name": self.name,
            "path": relative(self.path, root),
            "line": self.line,
            "iterations": self.iterations,
            "reason": self.reason,
            "description": self.description,
            "used_by": None
            if self.used_by is None
            else [{"path": relative(path, root), "line": line} for path, line in self.used_by],
        }

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

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "expression": self.expression}


@dataclass(frozen=True)
class Selector:
    """How the site's policy is chosen: the key as written, the key its example used, the keys."""

    expression: str
    current: str | int | None
    keys: tuple[str | int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"expression": self.expression, "current": self.current, "keys": list(self.keys)}


@dataclass(frozen=True)
class Setting:
    """The one literal in the project that sets the site's key by default (`setting.py`)."""

    path: str
    line: int  # 1-based
    column: int  # 0-based code points, the literal's start
    end_column: int
    text: str  # the literal as written, e.g. "'nothing_saveable'"

    def to_json(self, root: Path | None) -> dict[str, Any]:
        where = {"path": relative(self.path, root), "line": self.line}
        return {**where, "column": self.column, "end_column": self.end_column, "text": self.text}


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

    def to_json(self, root: Path | None) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "reason": self.reason,
            "tagged_outside": [{"path": relative(p, root), "line": n} for p, n in self.tagged_outside],
            "without": self.without,
        }


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

    def numbers(self) -> dict[str, int | None]:
        """Its figures as the contract names them."""
        return {
            "device_bytes": self.device_bytes,
            "host_bytes": self.host_bytes,
            "argument_bytes": self.argument_bytes,
            "computed_bytes": self.computed_bytes,
            "recompute_flops": self.recompute_flops,
            "peak_bytes": self.peak_bytes,
        }

    def to_json(self, root: Path | None) -> dict[str, Any]:
        numbers = self.numbers()
        data: dict[str, Any] = {
            "policy": self.policy,
            "current": self.current,
            **(numbers if self.error is None else dict.fromkeys(numbers)),
            "residuals": [
                {**r.to_json(root), "group": group}
                for r, group in zip(self.residuals, groups(self.residuals))
            ],
            "select": self.select.to_json() if self.select is not None else None,
        }
        if self.error is not None:
            data["error"] = self.error
        data["no_effect"] = [n.to_json(root) for n in self.no_effect]
        if self.was_compiled:
            data.update(self.compile_json())
        if self.run is not None:
            data["run"] = self.run.to_json()
        return data

    def compile_json(self) -> dict[str, Any]:
        """The keys --compile adds: ``compiled``, ``estimate_error``, ``compile_s``, and
        ``compile_error`` for a step that did not compile."""
        data: dict[str, Any] = {
            "compiled": self.compiled.to_json() if self.compiled is not None else None,
            "estimate_error": self.estimate_error,
            "compile_s": self.compile_s,
        }
        if self.compile_error is not None:
            data["compile_error"] = self.compile_error
        if self.exhausted is not None:
            data["exhausted"] = self.exhausted.to_json()
        if self.compile_stopped is not None:
            data["compile_stopped"] = self.compile_stopped
        return data


@dataclass(frozen=True)
class FitCheck:
    """The candidates a budget's suggestion depended on, compiled before suggesting (`fit.py`)."""

    policies: tuple[str, ...]
    seconds: float  # the wall time of advising them again, compiling

    def to_json(self) -> dict[str, Any]:
        return {"policies": list(self.policies), "seconds": self.seconds}


@dataclass(frozen=True)
class Advice:
    status: str  # "ok", or why not: a TraceStatus value, "no_example", "example_error", ...
    message: str
    path: str  # the site's file
    line: int  # the site's line (the `policy=` value's first line once found)
    jax_version: str | None = None
    platform: str | None = None
    python: str | None = None
    policies: tuple[PolicyAdvice, ...] = ()
    names: tuple[str, ...] = ()  # the checkpoint_name tags inside the site's checkpoint
    example: str | None = None
    error_path: str | None = None  # where the failure is anchored (the example's or the user's line)
    error_line: int | None = None
    duration_s: float | None = None
    timings: tuple[tuple[str, Any], ...] = ()  # the agent's: load_s, forward_s, max_rss_mb...
    selector: Selector | None = None  # where a key chooses the site's policy
    setting: Setting | None = None  # the literal default of that key in the project, if one
    setting_note: str | None = None  # why there is no `setting` (none, or several)
    notes: tuple[str, ...] = ()  # what the advice cannot see on this JAX release
    target: CompileTarget | None = None  # what --compile compiled for (None: not compiled)
    run: DeviceRuns | None = None  # with --run: where the steps ran
    fit_check: FitCheck | None = None  # a budget's candidates compiled before suggesting (`fit.py`)
    user_call: UserCall | None = None  # for a site in a library: the user's call that chooses it

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def current(self) -> PolicyAdvice | None:
        return next((p for p in self.policies if p.current), None)

    @property
    def compiled(self) -> bool:
        """Advised with --compile: the budget is compared with the compiled temporaries."""
        return any(p.was_compiled for p in self.policies)

    @property
    def on_tpu(self) -> bool:
        """Compiled for a TPU: XLA's compiled peak is then the step's whole memory on a chip."""
        return self.compiled and self.target is not None and self.target.is_tpu

    def budgeted_bytes(self, policy: PolicyAdvice) -> int | None:
        """What a budget is compared with: ``policy``'s compiled peak on a TPU target (all the
        step holds on a chip), its compiled temporaries on another target, else its estimated
        peak; None when unknown (then never suggested: a step that did not compile, or is larger
        than the chip)."""
        if not self.compiled:
            return policy.peak_bytes
        compiled = policy.compiled
        if compiled is None:
            return None
        device_peak = compiled.device_peak_bytes
        return device_peak if self.on_tpu and device_peak is not None else compiled.temp_bytes

    def fits(self, policy: PolicyAdvice) -> bool | None:
        """Whether ``policy``'s compiled step fits one chip of the TPU target; None where that is
        not known (no TPU target, or the step did not compile)."""
        if not self.on_tpu or self.target is None or self.target.memory_bytes is None:
            return None
        if policy.exhausted is not None:
            return False
        peak = policy.compiled.device_peak_bytes if policy.compiled is not None else None
        return None if peak is None else peak <= self.target.memory_bytes

    def over_bytes(self, policy: PolicyAdvice) -> int:
        """By how much ``policy``'s step exceeds a chip of the TPU target (0 where it fits)."""
        if policy.exhausted is not None:
            return policy.exhausted.over_bytes
        peak = policy.compiled.device_peak_bytes if policy.compiled is not None else None
        memory = self.target.memory_bytes if self.target is not None else None
        return max(peak - memory, 0) if peak is not None and memory is not None else 0

    def same_as(self, policy: PolicyAdvice) -> list[PolicyAdvice]:
        """The other candidates that keep the same residuals as ``policy`` (shapes, dtypes,
        memory)."""
        kept = policy.kept
        return [p for p in self.policies if p is not policy and kept is not None and p.kept == kept]

    def preference(self, policy: PolicyAdvice) -> tuple[Any, ...]:
        """What the suggestion prefers first, before the step's size: one that offloads nothing
        (host transfers cost time the recompute does not show), then the least recomputation."""
        recompute = policy.recompute_flops
        return (policy.host_bytes > 0, recompute if recompute is not None else float("inf"))

    def suggest(self, budget: int, by_time: bool = True) -> PolicyAdvice | None:
        """The policy with the least recomputation whose step fits ``budget`` at its peak (its
        `budgeted_bytes`) and, where the steps ran (--run), whose own measured peak in use is
        within it. First, ``by_time``, one whose measured step is not clearly slower than the
        fastest fitting one's (`runs.clearly_slower`); then (`preference`) one that offloads
        nothing (host transfers cost time: on a TPU v5e, offloading a stack's dots made the step
        3.2x slower than dots_saveable), then the least recomputation. On a tie, first what
        differs in the step: the lowest peak, the fewest computed bytes, then host bytes; only
        then the edit: the current policy (none), one a key selects (set it, the site stays),
        JAX's own policy over a custom callable (it holds under JAX's new remat), then the
        shortest expression. A candidate JAX rejected, or whose step did not compile (or, where
        some were compiled, was not), is never suggested (docs/advise.md: "Measured on the
        device", and why ties go first to what differs in the step)."""
        sizes = {id(p): self.budgeted_bytes(p) for p in self.policies}
        fitting = [
            p
            for p in self.policies
            if p.error is None
            and (size := sizes[id(p)]) is not None
            and max(size, runs.own_peak(p.run) or 0) <= budget
        ]
        fastest = runs.fastest_step(p.run for p in fitting) if by_time else None
        if not fitting:
            return None
        # by the step's time only where every candidate was compiled (--compile): the fit check
        # compiles what the ranking without it needs, and its suggestion must be --compile's
        timed = by_time and all(p.was_compiled or p.error is not None for p in self.policies)
        seconds = {id(p): step_time.ranked_seconds(self.target, p) if timed else None for p in fitting}
        return min(
            fitting,
            key=lambda p: (
                runs.clearly_slower(p.run, fastest),
                seconds[id(p)] if seconds[id(p)] is not None else float("inf"),
                *self.preference(p),
                sizes[id(p)],
                p.computed_bytes,
                p.host_bytes,
                not p.current,
                p.select is None,
                not p.jax_policy,
                len(p.policy),
            ),
        )

    def to_contract(self, root: Path | None, budget: int | None = None) -> dict[str, Any]:
        """The advice's one wire format: the JSON of `jax-lsp advise`, of the editor's commands
        and of `from_contract` (docs/advise.md); paths relative to ``root`` where inside it."""
        suggested = self.suggest(budget) if budget is not None and self.ok else None
        data: dict[str, Any] = {
            "status": self.status,
            "message": self.message,
            "target": {"path": relative(self.path, root), "line": self.line},
            "jax": self.jax_version,
            "platform": self.platform,
            "compile_target": self.target_json(),
            "policies": [
                {
                    **p.to_json(root),
                    "same_as": [o.policy for o in self.same_as(p)],
                    **self.fit_json(p),
                    **step_time.estimate_json(self.target, p),
                }
                for p in self.policies
            ],
            "suggested": None,
            "notes": list(self.notes),
            "fit_check": self.fit_check.to_json() if self.fit_check is not None else None,
            "python": self.python,
            "names": list(self.names),
            "example": {"spec": self.example} if self.example is not None else None,
            "duration_s": self.duration_s,
            "timings": dict(self.timings),
            "selector": self.selector.to_json() if self.selector is not None else None,
            "setting": self.setting.to_json(root) if self.setting is not None else None,
            "setting_note": self.setting_note,
            "user_call": self.user_call.to_json(relative(self.user_call.path, root), suggested)
            if self.user_call
            else None,
        }
        if self.run is not None:
            data["run"] = self.run.to_json()
        if suggested is not None:
            data["suggested"] = {
                "policy": suggested.policy,
                **suggested.numbers(),
                **({"compiled": suggested.compiled.to_json()} if suggested.compiled is not None else {}),
                "budget": budget,
                "select": suggested.select.to_json() if suggested.select is not None else None,
                "setting": self.setting.to_json(root)
                if suggested.select is not None and self.setting is not None
                else None,
            }
        if not self.ok:
            data["error"] = {
                "status": self.status,
                "message": self.message,
                "path": relative(self.error_path, root),
                "line": self.error_line,
            }
        return data

    def target_json(self) -> dict[str, Any] | None:
        """What the steps were compiled for (None: not compiled)."""
        target = self.target
        if target is None or not self.compiled:
            return None
        sharding = next((p.compiled.sharding for p in self.policies if p.compiled is not None), None)
        return {
            "name": target.name,
            "topology": target.topology,
            "chips": target.chips if target.is_tpu else None,
            "memory_bytes": target.memory_bytes,
            "source": target.source,
            "sharding": sharding,
        }

    def fit_json(self, policy: PolicyAdvice) -> dict[str, Any]:
        """``fits`` and ``over_bytes`` of a policy compiled for a TPU target; {} otherwise."""
        fits = self.fits(policy)
        return {} if fits is None else {"fits": fits, "over_bytes": self.over_bytes(policy)}

    @classmethod
    def failure(cls, status: str, message: str, path: str, line: int, **known: Any) -> Advice:
        return cls(status=status, message=message, path=path, line=line, **known)

    @classmethod
    def from_agent(cls, data: dict[str, Any] | TraceResult, path: str, line: int) -> Advice:
        """Build from the agent's answer (`from_contract`); malformed parts become empty, never
        raise."""
        if isinstance(data, TraceResult):  # the agent died, timed out or could not start
            return cls.failure(
                data.status.value,
                data.message,
                path,
                line,
                jax_version=data.jax_version,
                python=data.python,
                error_path=path,
                error_line=line,
            )
        return cls.from_contract(_in_contract_words(data), path, line)

    @classmethod
    def from_contract(
        cls, data: dict[str, Any], path: str = "", line: int = 0, root: Path | None = None
    ) -> Advice:
        """Read `to_contract`'s JSON (its paths relative to ``root``) or the agent's answer
        in the same words; ``path`` and ``line`` where it names no target."""
        error, target, example = (_table(data, key) for key in ("error", "target", "example"))
        setting = _table(data, "setting")
        compile_target = _table(data, "compile_target")
        fit_check = _table(data, "fit_check")
        return cls(
            status=str(data.get("status") or "error"),
            message=str(data.get("message") or ""),
            path=_absolute(target.get("path"), root) or path,
            line=_int(target.get("line")) or line,
            jax_version=data.get("jax"),
            platform=data.get("platform"),
            python=data.get("python"),
            policies=tuple(_policy(raw, root) for raw in data.get("policies") or () if isinstance(raw, dict)),
            names=tuple(str(n) for n in data.get("names") or ()),
            example=example.get("spec"),
            error_path=_absolute(error.get("path"), root) or (None if data.get("status") == "ok" else path),
            error_line=_int(error.get("line")),
            duration_s=data.get("duration_s"),
            timings=tuple(_table(data, "timings").items()),
            selector=_selector(_table(data, "selector")),
            setting=_setting(setting, root) if setting else None,
            setting_note=data.get("setting_note") if isinstance(data.get("setting_note"), str) else None,
            notes=tuple(n for n in data.get("notes") or () if isinstance(n, str)),
            target=_compile_target(compile_target) if compile_target else None,
            run=read_device_runs(data.get("run")),
            fit_check=FitCheck(
                tuple(map(str, fit_check.get("policies") or ())), float(fit_check.get("seconds") or 0)
            )
            if fit_check
            else None,
            user_call=read_user_call(data.get("user_call")),
        )


def _in_contract_words(answer: dict[str, Any]) -> dict[str, Any]:
    """The agent's answer as the contract words it: the agent's protocol (a trace's too) names
    JAX's release ``jax_version`` and a candidate's error ``{message, path, line}``."""
    policies = [
        {**raw, "error": _table(raw, "error").get("message")} if isinstance(raw, dict) else raw
        for raw in answer.get("policies") or ()
    ]
    return {**answer, "jax": answer.get("jax_version"), "policies": policies}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _residual(raw: dict[str, Any], root: Path | None) -> Residual:
    return Residual(
        shape=tuple(int(d) for d in raw.get("shape") or ()),
        dtype=str(raw.get("dtype") or ""),
        bytes=_int(raw.get("bytes")) or 0,
        memory="host" if raw.get("memory") == "host" else "device",
        kind=raw["kind"] if raw.get("kind") in KINDS else "computed",
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        path=_absolute(raw.get("path"), root),
        line=_int(raw.get("line")),
        iterations=_int(raw.get("iterations")),
        description=str(raw.get("description") or ""),
        reason=raw["reason"] if raw.get("reason") in REASONS else None,
        used_by=_lines(raw.get("used_by"), root),
    )


def _lines(raw: Any, root: Path | None) -> tuple[tuple[str, int], ...] | None:
    if not isinstance(raw, list):
        return None
    return tuple(
        (_absolute(item["path"], root) or "", item["line"])
        for item in raw
        if isinstance(item, dict) and isinstance(item.get("path"), str) and _int(item.get("line")) is not None
    )


def _key(value: Any) -> str | int | None:
    return value if isinstance(value, str) or _int(value) is not None else None


def _selector(raw: dict[str, Any]) -> Selector | None:
    expression = raw.get("expression")
    if not isinstance(expression, str) or not expression:
        return None
    keys = tuple(k for k in (_key(k) for k in raw.get("keys") or ()) if k is not None)
    return Selector(expression, _key(raw.get("current")), keys)


def _select(raw: Any) -> Select | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("expression"), str):
        return None
    key = _key(raw.get("key"))
    return Select(key, raw["expression"]) if key is not None else None


def _policy(raw: dict[str, Any], root: Path | None) -> PolicyAdvice:
    error = raw.get("error")
    return PolicyAdvice(
        policy=str(raw.get("policy") or ""),
        current=bool(raw.get("current")),
        device_bytes=_int(raw.get("device_bytes")) or 0,
        host_bytes=_int(raw.get("host_bytes")) or 0,
        recompute_flops=_int(raw.get("recompute_flops")),
        residuals=tuple(_residual(r, root) for r in raw.get("residuals") or () if isinstance(r, dict)),
        error=error if isinstance(error, str) else None,
        select=_select(raw.get("select")),
        peak_bytes=_int(raw.get("peak_bytes")),
        compiled=read_compiled(raw.get("compiled")),
        compile_s=raw["compile_s"] if isinstance(raw.get("compile_s"), (int, float)) else None,
        compile_error=raw["compile_error"] if isinstance(raw.get("compile_error"), str) else None,
        exhausted=read_exhausted(raw.get("exhausted")),
        compile_stopped=raw["compile_stopped"] if isinstance(raw.get("compile_stopped"), str) else None,
        run=read_step_run(raw.get("run")),
        no_effect=tuple(_no_effect(n, root) for n in raw.get("no_effect") or () if isinstance(n, dict)),
    )


def _no_effect(raw: dict[str, Any], root: Path | None) -> NoEffect:
    places = (p for p in raw.get("tagged_outside") or () if isinstance(p, dict))
    return NoEffect(
        name=str(raw.get("name") or ""),
        role=str(raw.get("role") or ""),
        reason=str(raw.get("reason") or ""),
        tagged_outside=tuple(
            (_absolute(p["path"], root) or "", p["line"])
            for p in places
            if isinstance(p.get("path"), str) and _int(p.get("line"))
        ),
        without=raw.get("without") if isinstance(raw.get("without"), str) else None,
    )


def relative(path: str | None, root: Path | None) -> str | None:
    """``path`` relative to ``root`` when inside it (as the contract shows paths), else as is."""
    if path is None or root is None:
        return path
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def _absolute(path: Any, root: Path | None) -> str | None:
    """A contract's ``path`` (`relative`) as the file's own path again."""
    if not isinstance(path, str):
        return None
    if root is None or Path(path).is_absolute():
        return path
    return str(root.resolve() / path)


def _setting(raw: dict[str, Any], root: Path | None) -> Setting | None:
    where, text = _absolute(raw.get("path"), root), raw.get("text")
    line, column, end = (_int(raw.get(key)) for key in ("line", "column", "end_column"))
    if where is None or not isinstance(text, str) or line is None or column is None or end is None:
        return None
    return Setting(where, line, column, end, text)


def _compile_target(raw: dict[str, Any]) -> CompileTarget | None:
    try:
        return parse_target(str(raw.get("name")), str(raw.get("source")))
    except CompileTargetError:
        return None
