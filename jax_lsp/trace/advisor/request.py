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
from dataclasses import replace
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor.advice import Advice, relative
from jax_lsp.trace.advisor.fit import check_fit
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
    answer = service.submit(
        "advise", params, options, interpreter=interpreter, cwd=params["root"], answer=_as_is
    ).result()
    if isinstance(answer, dict) and answer.get("status") == "ok":
        if compile:
            _compile_each(service, answer, {**params, **_target_params(target)}, options, interpreter)
        if run:
            _run_each(service, answer, params, options.for_compile(), interpreter)
    return _advice(answer, params, target if compile else None)


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


def _as_is(answer: dict | TraceResult) -> dict | TraceResult:
    return answer


def _failure(answer: dict | TraceResult) -> tuple[str, str]:
    """The status and message of an answer that is not ok: the agent's, or the service's."""
    if isinstance(answer, TraceResult):
        return answer.status.value, answer.message
    return str(answer.get("status")), str(answer.get("message"))


# The compiles in flight at once: two, as the advise child and its worker trace on two CPUs.
COMPILES_IN_FLIGHT = 2


def _compile_each(
    service: TraceService,
    answer: dict[str, Any],
    params: dict[str, Any],
    options: TraceOptions,
    interpreter: str | None,
) -> None:
    """Add to each entry of ``answer`` (an ok advise's) its compiled step (``compiled``,
    ``compile_s``, ``estimate_error``), or why there is none (``compile_error``, and
    ``compile_stopped`` where the compile's process was stopped: ``memory``, ``timeout``...).
    Each candidate is compiled in a child of its own, which traces the example again (from the
    agent's warm imports) and the candidate; a JAX rejection is compiled by none."""
    entries = answer.get("policies") or []
    indices = [i for i, entry in enumerate(entries) if isinstance(entry, dict) and not entry.get("error")]
    compile_options = options.for_compile()
    for start in range(0, len(indices), COMPILES_IN_FLIGHT):
        running: list[tuple[int, Future]] = []
        for index in indices[start : start + COMPILES_IN_FLIGHT]:
            job = service.submit(
                "advise",
                {**params, "compile": True, "only": index},
                compile_options,
                interpreter=interpreter,
                cwd=params["root"],
                answer=_as_is,
            )
            running.append((index, job.future))
        for index, future in running:
            compiled = future.result()
            entries[index].update(_compiled(compiled, entries[index], compile_options))
            _add_notes(answer, compiled)


COMPILED_KEYS = ("compiled", "compile_s", "estimate_error", "compile_error", "exhausted")


def _add_notes(answer: dict[str, Any], compiled: dict | TraceResult) -> None:
    """The notes of a candidate's compile (libtpu missing for a TPU target...) in ``answer``'s,
    each once."""
    notes = answer.setdefault("notes", [])
    if isinstance(compiled, dict):
        notes.extend(note for note in compiled.get("notes") or () if note not in notes)


def _compiled(answer: dict | TraceResult, entry: dict[str, Any], options: TraceOptions) -> dict[str, Any]:
    """The compile's keys for ``entry`` from one candidate's compile ``answer``."""
    if isinstance(answer, dict) and answer.get("status") == "ok":
        [compiled] = answer.get("policies") or [{}]
        if compiled.get("policy") == entry.get("policy"):
            return {key: compiled[key] for key in COMPILED_KEYS if key in compiled}
        return {"compiled": None, "compile_error": "the candidates changed while it compiled: advise again"}
    status, message = _failure(answer)
    return {"compiled": None, "compile_stopped": status, "compile_error": _stopped(status, message, options)}


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


def _run_each(
    service: TraceService,
    answer: dict[str, Any],
    params: dict[str, Any],
    options: TraceOptions,
    interpreter: str | None,
) -> None:
    """Add to each entry of ``answer`` (an ok advise's) its ``run`` on the local accelerator, and
    to ``answer`` the ``run`` of them all (``platform``, ``device``, and a ``note`` where they did
    not run on an accelerator). One request, in the agent started with the user's environment:
    its child opens the device once for every candidate, and gives it back as it exits."""
    ran = service.submit(
        "advise",
        {**params, "run": True},
        options,
        interpreter=interpreter,
        cwd=params["root"],
        answer=_as_is,
        device=True,
    ).result()
    if isinstance(ran, dict) and ran.get("status") == "ok":
        runs = {r.get("policy"): r for r in ran.get("runs") or () if isinstance(r, dict)}
        for entry in answer.get("policies") or ():
            if isinstance(entry, dict) and entry.get("policy") in runs:
                entry["run"] = runs[entry["policy"]]
        platform = ran.get("platform")
        note = NO_ACCELERATOR if platform == "cpu" else None
        answer["run"] = {"platform": platform, "device": ran.get("device"), "note": note}
        return
    status, message = _failure(ran)
    note = BUSY if status == "device_busy" else f"nothing ran on the device: {message}"
    answer["run"] = {"platform": None, "device": None, "note": note}
