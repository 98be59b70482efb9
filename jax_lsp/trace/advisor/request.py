"""Asking the trace agent for advice on one site, with the site's example.

`advise()` sends an ``advise`` request through the trace's service (the same warm agent, a fork
per request, the timeout and memory limit of a trace); the answer becomes an `Advice`. With
``compile``, each candidate's step is then compiled in a request of its own, under the compile's
limits: a candidate whose compile runs out of memory or time is a row that says so, and the
others still answer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor.advice import Advice, PolicyAdvice, relative
from jax_lsp.trace.advisor.fit import check_fit
from jax_lsp.trace.advisor.runs import DeviceRuns, read_step_run
from jax_lsp.trace.advisor.setting import with_setting
from jax_lsp.trace.compile_target import CompileTarget
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.result import TraceResult
from jax_lsp.trace.service import TraceJob, TraceService, site_params

EXAMPLE_COMMENT = re.compile(r"#\s*jax-lsp:\s*example\s*=\s*(?P<spec>[^\s#]+)")


def example_for(path: Path, line: int, examples: dict[str, str], root: Path | None) -> str | None:
    """The example for the site at ``line``: a ``# jax-lsp: example=SPEC`` comment on the line,
    else ``[tool.jax-lsp.examples]`` by ``"file.py:LINE"``, then by ``"file.py"``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    if 1 <= line <= len(lines):
        match = EXAMPLE_COMMENT.search(lines[line - 1])
        if match:
            return match["spec"]
    rel = relative(str(path), root) or str(path)
    for key in (f"{rel}:{line}", rel):
        if key in examples:
            return examples[key]
    return None


def submit_advise(
    service: TraceService,
    path: str | os.PathLike,
    line: int,
    column: int | None = None,
    *,
    example: str | None,
    policies: list[str] | tuple[str, ...] = (),
    root: str | os.PathLike | None = None,
    import_root: str | os.PathLike | None = None,
    cwd: str | os.PathLike | None = None,
    interpreter: str | None = None,
    options: TraceOptions | None = None,
    compile: bool = False,
    target: CompileTarget | None = None,
) -> TraceJob[Advice]:
    """Start advising the site at 1-based ``line`` of ``path`` (`site_params`); the job's result
    is an `Advice`, with the setting of the key that chooses the policy found under the root.
    ``cwd``: the folder the user runs from (the CLI's), where the agent runs the example, first
    on its ``sys.path`` and first of the folders an example path is relative to. ``compile``:
    also compile each candidate's step in this one request (the editor's second pass on a TPU
    target), for ``target`` (a TPU slice, from its topology) or, without one or for ``cpu``, the
    local device; the advice says which. `advise` compiles each candidate in a request of its own."""
    params = _advise_params(
        path, line, column, example=example, policies=policies, root=root, import_root=import_root, cwd=cwd
    )
    if compile:
        params = {**params, "compile": True, **_target_params(target)}
    return service.submit(
        "advise",
        params,
        options or TraceOptions(),
        interpreter=interpreter,
        cwd=params["root"],
        answer=lambda answer: _advice(answer, params, target if compile else None),
    )


def advise(
    service: TraceService,
    path: str | os.PathLike,
    line: int,
    column: int | None = None,
    *,
    interpreter: str | None = None,
    options: TraceOptions | None = None,
    compile: bool = False,
    target: CompileTarget | None = None,
    run: bool = False,
    **site: Any,
) -> Advice:
    """`submit_advise` (``site``: its ``example``, ``policies``, ``root``, ``import_root`` and
    ``cwd``), waited for. ``compile``: then compile each candidate's step for ``target`` (a TPU
    slice, from its topology) or, without one or for ``cpu``, the local device (`--compile`),
    each in a request of its own under ``options.for_compile()``. ``run``: then
    run each candidate's step on the local accelerator (`--run`, `_run_each`)."""
    options = options or TraceOptions()
    params = _advise_params(path, line, column, **site)
    request = _Request(service, params, interpreter)
    advice = Advice.from_agent(request.ask(options).result(), params["path"], params["line"])
    if advice.ok and compile:
        advice = _compile_each(request, advice, options, target)
    if advice.ok and run:
        advice = _run_each(request, advice, options.for_compile())
    return with_setting(replace(advice, target=target if compile else None), Path(params["root"]))


def advise_and_run(
    service: TraceService, path: str | os.PathLike, line: int, *args: Any, **request: Any
) -> TraceJob[Advice]:
    """`advise` with ``run`` (the editor's "Run policies on the device"), waited for on the
    calling thread: the job it returns is done. It is not cancelled midway: the run's child
    gives the device back as it ends."""
    return _done(advise(service, path, line, *args, run=True, **request))


def compiling(
    service: TraceService, path: str | os.PathLike, line: int, **request: Any
) -> Callable[[list[str]], Advice]:
    """What advises the site at ``line`` again for the policies given, compiling them
    (`fit.check_fit`'s ``compile_candidates``); ``request`` as `advise` takes it."""

    def compile_candidates(policies: list[str]) -> Advice:
        return advise(service, path, line, **{**request, "policies": policies, "compile": True})

    return compile_candidates


def fit_checked(
    advice: Advice, budget: int, service: TraceService, path: str | os.PathLike, line: int, **request: Any
) -> TraceJob[Advice]:
    """`fit.check_fit` of ``advice`` for ``budget`` (the editor's suggestion, as the CLI's
    ``--budget``), waited for on the calling thread, as `advise_and_run`."""
    return _done(check_fit(advice, budget, compiling(service, path, line, **request)))


def with_runs(compiled: Advice, ran: Advice) -> Advice:
    """``compiled`` with the steps ``ran`` measured (the same site advised with --run)."""
    steps = {p.policy: p.run for p in ran.policies if not p.current}
    current = ran.current.run if ran.current is not None else None
    policies = tuple(replace(p, run=current if p.current else steps.get(p.policy)) for p in compiled.policies)
    return replace(compiled, policies=policies, run=ran.run)


def _done(advice: Advice) -> TraceJob[Advice]:
    done: Future = Future()
    done.set_result(advice)
    return TraceJob(None, None, None, done)


def _advise_params(
    path: str | os.PathLike,
    line: int,
    column: int | None,
    *,
    example: str | None,
    policies: list[str] | tuple[str, ...] = (),
    root: str | os.PathLike | None = None,
    import_root: str | os.PathLike | None = None,
    cwd: str | os.PathLike | None = None,
) -> dict[str, Any]:
    return {
        **site_params(path, line, column, root, import_root),
        "example": example,
        "policies": list(policies),
        "cwd": os.path.realpath(cwd) if cwd else None,
    }


def _target_params(target: CompileTarget | None) -> dict[str, Any]:
    return {"target": target.to_params() if target is not None else None}


def _advice(
    answer: dict | TraceResult, params: dict[str, Any], target: CompileTarget | None = None
) -> Advice:
    """The `Advice` of ``answer``, compiled for ``target`` where it was compiled for one."""
    advice = replace(Advice.from_agent(answer, params["path"], params["line"]), target=target)
    return with_setting(advice, Path(params["root"]))


@dataclass(frozen=True)
class _Request:
    """One site's ``advise`` request: the service it goes through and what it asks."""

    service: TraceService
    params: dict[str, Any]
    interpreter: str | None

    def ask(self, options: TraceOptions, device: bool = False, **more: Any) -> Future:
        """Send it, with ``more`` params; the future's result is the agent's answer as it came."""
        params = {**self.params, **more}
        job = self.service.submit(
            "advise",
            params,
            options,
            interpreter=self.interpreter,
            cwd=params["root"],
            answer=_as_is,
            device=device,
        )
        return job.future


def _as_is(answer: dict | TraceResult) -> dict | TraceResult:
    return answer


# The compiles in flight at once: two, as the advise child and its worker trace on two CPUs.
COMPILES_IN_FLIGHT = 2


def _compile_each(
    request: _Request, advice: Advice, options: TraceOptions, target: CompileTarget | None
) -> Advice:
    """``advice`` (an ok one) with each candidate's compiled step (``compiled``, ``compile_s``),
    or why there is none (``compile_error``, and ``compile_stopped`` where the compile's process
    was stopped: ``memory``, ``timeout``...), and the compiles' notes. Each candidate is compiled
    in a child of its own, which traces the example again (from the agent's warm imports) and
    the candidate; a JAX rejection is compiled by none."""
    policies, notes = list(advice.policies), list(advice.notes)
    indices = [i for i, policy in enumerate(policies) if policy.error is None]
    compile_options = options.for_compile()
    for start in range(0, len(indices), COMPILES_IN_FLIGHT):
        running = [
            (index, request.ask(compile_options, compile=True, only=index, **_target_params(target)))
            for index in indices[start : start + COMPILES_IN_FLIGHT]
        ]
        for index, future in running:
            compiled = Advice.from_agent(future.result(), advice.path, advice.line)
            policies[index] = _compiled(compiled, policies[index], compile_options)
            notes.extend(note for note in compiled.notes if note not in notes)
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
    return replace(
        entry,
        compiled=alone.compiled,
        compile_s=alone.compile_s,
        compile_error=alone.compile_error,
        exhausted=alone.exhausted,
    )


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
    return message


NO_ACCELERATOR = "no accelerator here: the steps ran on the CPU"
BUSY = "the TPU is in use by another process: nothing ran on it"


def _run_each(request: _Request, advice: Advice, options: TraceOptions) -> Advice:
    """``advice`` (an ok one) with each candidate's ``run`` on the local accelerator, and the
    ``run`` of them all (``platform``, ``device``, and a ``note`` where they did not run on an
    accelerator). One request, in the agent started with the user's environment: its child
    opens the device once for every candidate, and gives it back as it exits."""
    answer = request.ask(options, device=True, run=True).result()
    ran = Advice.from_agent(answer, advice.path, advice.line)
    if not ran.ok:
        why = BUSY if ran.status == "device_busy" else f"nothing ran on the device: {ran.message}"
        return replace(advice, run=DeviceRuns(None, None, why))
    runs = {r.get("policy"): read_step_run(r) for r in answer.get("runs") or () if isinstance(r, dict)}
    policies = tuple(replace(p, run=runs[p.policy]) if p.policy in runs else p for p in advice.policies)
    note = NO_ACCELERATOR if ran.platform == "cpu" else None
    return replace(advice, policies=policies, run=DeviceRuns(ran.platform, answer.get("device"), note))
