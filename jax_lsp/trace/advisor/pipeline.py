"""One advise of a site, step by step: the same pipeline for the command line
(`cli/commands/advise.py`) and the editor (`server/features/advisor/`).

The steps (`steps.py`), in order, each a request (or a request per candidate) to the trace agent:

    estimate  the example traced under each candidate and each step's peak estimated from its
              trace (one request: the estimate reads the traced jaxprs), under the trace's limits
    compile   each candidate's step compiled for the target (`--compile`, a TPU target), a
              request per candidate, each under the compile's limits
    run       every candidate's step run on the local accelerator (`--run`): one request, which
              opens the device once, under the compile's limits for each candidate it compiles
    fit       a budget's suggestion checked by compiling the candidates it depends on (`--budget`
              without `--compile`), a request per candidate, as `compile`'s

A step runs where `Step.wanted` says so, reports its progress (`StepEvent`, one per request
answered), and stops at once when the advise is cancelled (`Cancel`: the request in flight is
killed, and with it its process group; no request starts after): the steps that ended keep
their answers, and the advice says which candidates were not compiled. Each request's answer
comes from the `AnswerCache` where it holds one for what decides it.

Adding a step is adding a `Step` to `STEPS` (`steps.py`); a per-candidate figure of the compile is
a field of the agent's compile answer, read into `PolicyAdvice`, named in `compiled.COMPILE_FIELDS`.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.answer_cache import AnswerCache, environment
from jax_lsp.trace.compile_target import CompileTarget
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.result import TraceResult, TraceStatus

if TYPE_CHECKING:
    from jax_lsp.trace.service import TraceJob, TraceService

CANCELLED = "cancelled"


@dataclass(frozen=True)
class Plan:
    """What an advise asks for beside the estimate, and the limits of its steps."""

    options: TraceOptions = field(default_factory=TraceOptions)
    compile: bool = False  # compile each candidate for ``target`` (None or cpu: the local device)
    target: CompileTarget | None = None
    run: bool = False  # run each candidate's step on the local accelerator
    budget: int | None = None  # check the suggestion for it by compiling (when not compiled)

    @property
    def chips(self) -> dict[str, Any]:
        """What every request of an advise for a TPU ``target`` says of it: its chips, as many CPU
        devices as the example sees to build its mesh over (`placement.see_chips`)."""
        target = self.target
        return {"chips": target.chips} if target is not None and target.is_tpu else {}


@dataclass(frozen=True)
class StepEvent:
    """A step's progress: ``done`` of ``total`` requests answered (``cached``: from the cache)."""

    step: str
    done: int
    total: int
    message: str
    cached: bool = False

    @property
    def text(self) -> str:
        """``mlp.py:14: compiled dots_saveable (3/8, cached)``."""
        count = [f"{self.done}/{self.total}"] if self.total > 1 else []
        notes = ", ".join([*count, *(["cached"] if self.cached else [])])
        return f"{self.message} ({notes})" if notes else self.message


class Step(Protocol):
    name: str

    def wanted(self, plan: Plan, advice: Advice) -> bool:
        """Whether the step runs after ``advice`` (an ok one, or `PENDING` before the first)."""
        ...

    def run(self, pipeline: Pipeline, advice: Advice) -> Advice:
        """``advice`` with what the step adds."""
        ...


class Cancel:
    """Stops an advise: the requests in flight are killed (`TraceJob.cancel`: the agent kills
    the child's process group), and none starts after."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: set[TraceJob] = set()
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            jobs = list(self._jobs)
        for job in jobs:
            job.cancel()

    def track(self, job: TraceJob) -> None:
        with self._lock:
            self._jobs.add(job)
            cancelled = self.cancelled
        if cancelled:
            job.cancel()

    def done(self, job: TraceJob) -> None:
        with self._lock:
            self._jobs.discard(job)


@dataclass(frozen=True)
class SiteRequest:
    """One site's ``advise`` requests: the service they go through and what they ask
    (`request.site_request`)."""

    service: TraceService
    params: dict[str, Any]
    interpreter: str | None

    @property
    def name(self) -> str:
        return f"{self.params['path'].rsplit('/', 1)[-1]}:{self.params['line']}"


class Pipeline:
    """The steps of one site's advise (`STEPS`), run in order on the calling thread."""

    def __init__(
        self,
        request: SiteRequest,
        plan: Plan,
        steps: Sequence[Step],
        *,
        cache: AnswerCache | None = None,
        progress: Callable[[StepEvent], None] | None = None,
        cancel: Cancel | None = None,
        keep: Callable[[Advice], None] | None = None,
    ) -> None:
        self.request, self.plan, self.steps, self.cache = request, plan, steps, cache
        self.progress = progress or (lambda event: None)
        self.cancel = cancel or Cancel()
        self.keep = keep or (lambda advice: None)
        self.read_files: tuple[str, ...] = ()  # what the estimate read: the later answers read the same
        # Where the compiles keep their executables for the run on the device, which loads them
        # instead of compiling each step again (the agent's `kept`): while an advise both compiles
        # and runs.
        self.executables: str | None = None

    def run(self) -> Advice:
        """The advice: each wanted step's answer added in turn (``keep`` hears each), as far as
        they got when cancelled."""
        with contextlib.ExitStack() as stack:
            if self.plan.compile and self.plan.run:
                self.executables = stack.enter_context(tempfile.TemporaryDirectory(prefix="jax-lsp-run-"))
            advice = PENDING
            for step in self.steps:
                if advice is not PENDING and (not advice.ok or self.cancel.cancelled):
                    break
                if step.wanted(self.plan, advice):
                    advice = step.run(self, advice)
                    self.keep(advice)
            self.executables = None
        return advice

    def report(self, step: str, done: int, total: int, message: str, cached: bool = False) -> None:
        self.progress(StepEvent(step, done, total, f"{self.request.name}: {message}", cached))

    def ask_each(
        self,
        step: str,
        options: TraceOptions,
        asks: Sequence[dict[str, Any]],
        in_flight: int,
        what: Callable[[int], str],
    ) -> list[dict | TraceResult]:
        """The answers of one request per item of ``asks`` (more params each), ``in_flight`` at a
        time; progress after each (``what(i)`` names the i-th)."""
        answers: list[dict | TraceResult] = []
        for start in range(0, len(asks), in_flight):
            pending = [self._send(step, options, more) for more in asks[start : start + in_flight]]
            for offset, send in enumerate(pending):
                answers.append(send())
                index = start + offset
                self.report(step, index + 1, len(asks), what(index), cached=send.cached)
        return answers

    def ask(
        self, step: str, options: TraceOptions, done: str, device: bool = False, **more: Any
    ) -> dict | TraceResult:
        """The answer of one request with ``more`` params, under ``options``; ``done`` is said
        once it answered."""
        send = self._send(step, options, more, device)
        answer = send()
        self.report(step, 1, 1, done, cached=send.cached)
        return answer

    def _send(self, step: str, options: TraceOptions, more: dict[str, Any], device: bool = False) -> _Pending:
        """Send one request (none where the cache answers it, or the advise was cancelled)."""
        params = {**self.request.params, **self.plan.chips, **more}
        key = None
        if self.cache is not None and not device:  # a measurement on the device is never kept
            keyed = {name: value for name, value in params.items() if name != "executables"}
            key = self.cache.key(step, keyed, options.to_params(), self._environment)
            answer = self.cache.get(key)
            if answer is not None:
                return _Pending(answer=answer, cached=True)
        if self.cancel.cancelled:
            return _Pending(answer=_cancelled())
        started = self.cache.stamp() if key is not None and self.cache is not None else None
        job = self.request.service.submit(
            "advise",
            params,
            options,
            interpreter=self.request.interpreter,
            cwd=params["root"],
            answer=_as_is,
            device=device,
        )
        self.cancel.track(job)
        return _Pending(job=job, on_answer=functools.partial(self._answered, key, started, job))

    def _answered(
        self, key: str | None, started: int | None, job: TraceJob, answer: dict | TraceResult
    ) -> None:
        self.cancel.done(job)
        if isinstance(answer, dict) and answer.get("status") == "ok":
            files = answer.get("read_files") or self.read_files
            if not self.read_files:
                self.read_files = tuple(files)
            if key is not None and self.cache is not None and files:
                self.cache.put(key, files, answer, started)

    @functools.cached_property
    def _environment(self) -> dict[str, Any]:
        return environment(self.request.interpreter)


class _Pending:
    """A request's answer: already known (the cache's, or a cancellation), or its job's."""

    def __init__(
        self,
        answer: dict | TraceResult | None = None,
        job: TraceJob | None = None,
        on_answer: Callable[[dict | TraceResult], None] | None = None,
        cached: bool = False,
    ) -> None:
        self.answer, self.job, self.on_answer, self.cached = answer, job, on_answer, cached

    def __call__(self) -> dict | TraceResult:
        if self.job is None:
            assert self.answer is not None
            return self.answer
        try:
            answer: dict | TraceResult = self.job.result()
        except BaseException:  # Ctrl-C on the command line: the request dies with it
            self.job.cancel()
            raise
        if self.on_answer is not None:
            self.on_answer(answer)
        return answer


def _as_is(answer: dict | TraceResult) -> dict | TraceResult:
    return answer


def _cancelled() -> TraceResult:
    return TraceResult.failure(TraceStatus.CANCELLED, "The advice was cancelled")


PENDING = Advice("pending", "not advised yet", "", 0)  # what the first step (the estimate) is given
