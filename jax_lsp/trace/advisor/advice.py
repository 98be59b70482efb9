"""The advisor's answer for one site: what each candidate policy keeps there (`PolicyAdvice`,
`policy_advice.py`), what it was compiled for and measured on, and what a budget suggests
(`Advice.suggest`).

`Advice.from_agent` reads the trace agent's answer to an ``advise`` request; `to_contract()` is
the JSON of `jax-lsp advise --output-format json` (docs/advise.md), and `from_contract` reads it
back: both are `contract.py`'s. Sizes are bytes (`sizes.py` reads and writes them for people).
Lines are 1-based, as Python numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor import runs, step_time
from jax_lsp.trace.advisor.contract import advice_fields, in_contract_words, write_advice
from jax_lsp.trace.advisor.policy_advice import FitCheck, PolicyAdvice, Selector, Setting
from jax_lsp.trace.advisor.runs import DeviceRuns
from jax_lsp.trace.advisor.user_call import UserCall
from jax_lsp.trace.compile_target import CompileTarget
from jax_lsp.trace.result import TraceResult


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
        """The advice's one wire format (`contract.write_advice`): the JSON of `jax-lsp advise`,
        of the editor's commands and of `from_contract`; paths relative to ``root`` where inside it."""
        return write_advice(self, root, budget)

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
        return cls.from_contract(in_contract_words(data), path, line)

    @classmethod
    def from_contract(
        cls, data: dict[str, Any], path: str = "", line: int = 0, root: Path | None = None
    ) -> Advice:
        """Read `to_contract`'s JSON (its paths relative to ``root``) or the agent's answer
        in the same words, every field of the advice that wrote it (`contract.advice_fields`);
        ``path`` and ``line`` where it names no site."""
        return cls(**advice_fields(data, path, line, root))
