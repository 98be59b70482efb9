"""The steps of an advise (`pipeline.py`): the estimate, each candidate's compile, the run on the
device and the budget's fit check, in the order `STEPS` runs them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.compiled import COMPILE_FIELDS
from jax_lsp.trace.advisor.fit import check_fit
from jax_lsp.trace.advisor.pipeline import Pipeline, Plan, Step
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.runs import DeviceRuns, read_step_run
from jax_lsp.trace.advisor.setting import with_setting
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.options import TraceOptions

# The compiles in flight at once: two, as the advise child and its worker trace on two CPUs.
COMPILES_IN_FLIGHT = 2
NO_ACCELERATOR = "no accelerator here: the steps ran on the CPU"
BUSY = "the TPU is in use by another process: nothing ran on it"


class Estimate:
    """The example traced under each candidate, and each step's peak estimated from its trace."""

    name = "estimate"

    def wanted(self, plan: Plan, advice: Advice) -> bool:
        return True

    def run(self, pipeline: Pipeline, advice: Advice) -> Advice:
        pipeline.report(self.name, 0, 1, "tracing the example under each candidate")
        answer = pipeline.ask(self.name, pipeline.plan.options, "estimated")
        params = pipeline.request.params
        estimated = Advice.from_agent(answer, params["path"], params["line"])
        return with_setting(estimated, Path(params["root"]))


class CompileEach:
    """Each candidate's step compiled for the target, in a request of its own under the compile's
    limits: a candidate whose compile runs out of memory or time is a row that says so, and the
    others still answer. A JAX rejection is compiled by none."""

    name = "compile"

    def wanted(self, plan: Plan, advice: Advice) -> bool:
        return plan.compile

    def run(self, pipeline: Pipeline, advice: Advice) -> Advice:
        indices = [i for i, policy in enumerate(advice.policies) if policy.error is None]
        compiled = compile_candidates(pipeline, self.name, advice, indices, pipeline.executables)
        return replace(compiled, target=pipeline.plan.target)


class RunOnDevice:
    """Every candidate's step run on the local accelerator: one request, in the agent started with
    the user's environment, whose child opens the device once and gives it back as it exits.
    Its limits: the compile's memory, and its timeout for each candidate it compiles and runs.
    Never answered from the cache: it measures."""

    name = "run"

    def wanted(self, plan: Plan, advice: Advice) -> bool:
        return plan.run

    def run(self, pipeline: Pipeline, advice: Advice) -> Advice:
        candidates = sum(1 for p in advice.policies if p.error is None)
        pipeline.report(self.name, 0, 1, f"running {candidates} candidates on the device")
        options = pipeline.plan.options.for_run(candidates)
        kept = {"executables": pipeline.executables} if pipeline.executables else {}
        answer = pipeline.ask(self.name, options, "ran on the device", device=True, run=True, **kept)
        ran = Advice.from_agent(answer, advice.path, advice.line)
        if not ran.ok or not isinstance(answer, dict):
            why = BUSY if ran.status == "device_busy" else f"nothing ran on the device: {ran.message}"
            return replace(advice, run=DeviceRuns(None, None, why))
        runs = {r.get("policy"): read_step_run(r) for r in answer.get("runs") or () if isinstance(r, dict)}
        policies = tuple(replace(p, run=runs[p.policy]) if p.policy in runs else p for p in advice.policies)
        note = NO_ACCELERATOR if ran.platform == "cpu" else None
        return replace(advice, policies=policies, run=DeviceRuns(ran.platform, answer.get("device"), note))


class FitCheck:
    """A budget's suggestion checked by compiling the candidates it depends on (`fit.check_fit`),
    each as `CompileEach` compiles it; an advice already compiled needs none."""

    name = "fit"

    def wanted(self, plan: Plan, advice: Advice) -> bool:
        return plan.budget is not None and not advice.compiled

    def run(self, pipeline: Pipeline, advice: Advice) -> Advice:
        budget = pipeline.plan.budget
        assert budget is not None  # `wanted`
        pipeline.report(self.name, 0, 1, f"compiling the candidates for the {format_bytes(budget)} budget")

        def compiling(policies: list[str]) -> Advice:
            index = {p.policy: i for i, p in reversed(list(enumerate(advice.policies)))}
            answered = compile_candidates(
                pipeline, self.name, advice, [index[p] for p in policies if p in index]
            )
            return replace(
                answered, policies=tuple(answered.policies[index[p]] for p in policies if p in index)
            )

        return check_fit(advice, budget, compiling)


STEPS: tuple[Step, ...] = (Estimate(), CompileEach(), RunOnDevice(), FitCheck())


def compile_candidates(
    pipeline: Pipeline, step: str, advice: Advice, indices: list[int], executables: str | None = None
) -> Advice:
    """``advice`` with the candidates at ``indices`` compiled (`compiled.COMPILE_FIELDS`), each in a
    child of its own, which traces the example again (from the agent's warm imports) and the
    candidate; and the compiles' notes. A compile not answered (cancelled) says so.
    ``executables``: the folder where each compile keeps its executable for the run."""
    policies, notes = list(advice.policies), list(advice.notes)
    options = pipeline.plan.options.for_compile()
    target = pipeline.plan.target
    kept = {"executables": executables} if executables else {}
    asks = [
        {"compile": True, "only": i, "target": target.to_params() if target else None, **kept}
        for i in indices
    ]

    def what(n: int) -> str:
        return f"compiled {policies[indices[n]].policy.removeprefix('jax.checkpoint_policies.')}"

    answers = pipeline.ask_each(step, options, asks, COMPILES_IN_FLIGHT, what)
    for index, answer in zip(indices, answers):
        alone = Advice.from_agent(answer, advice.path, advice.line)
        policies[index] = _compiled(alone, policies[index], options)
        notes.extend(note for note in alone.notes if note not in notes)
    return replace(advice, policies=tuple(policies), notes=tuple(notes))


def _compiled(compiled: Advice, entry: PolicyAdvice, options: TraceOptions) -> PolicyAdvice:
    """``entry`` with what one candidate's compile, ``compiled``, said of its step."""
    if not compiled.ok:
        error = _stopped(compiled.status, compiled.message, options)
        return replace(entry, compiled=None, compile_stopped=compiled.status, compile_error=error)
    [alone] = compiled.policies or [None]
    if alone is None or alone.policy != entry.policy:
        return replace(
            entry, compiled=None, compile_error="the candidates changed while it compiled: advise again"
        )
    return replace(entry, **{name: getattr(alone, name) for name in COMPILE_FIELDS})


def _stopped(status: str, message: str, options: TraceOptions) -> str:
    """What a compile that did not answer says: what stopped it, and what to do."""
    if status == "timeout":
        return f"did not compile within {options.timeout:g} s and was stopped: raise --compile-timeout"
    if status == "memory":
        return (
            f"ran out of memory compiling (limit {options.memory_mb} MiB) and was stopped: "
            "raise --compile-memory-limit-mb"
        )
    if status == "crashed":  # the agent's message names the signal and the limit
        return f"{message}: raise --compile-memory-limit-mb"
    if status == "cancelled":
        return "not compiled: the advice was cancelled"
    return message
