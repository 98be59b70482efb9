"""Asking the trace agent for advice on one site, with the site's example.

`advise()` runs the site's `Pipeline` (`pipeline.py`, its steps in `steps.py`): an ``advise``
request through the trace's service (the same warm agent, a fork per request, the timeout and
memory limit of a trace), whose answer becomes an `Advice`; then, as asked, each candidate's
step compiled in a request of its own under the compile's limits (a candidate whose compile runs
out of memory or time is a row that says so, and the others still answer), the steps run on the
device, and a budget's fit check. The command line and the editor both go this way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.answer_cache import AnswerCache
from jax_lsp.trace.advisor.pipeline import Cancel, Pipeline, Plan, SiteRequest, StepEvent
from jax_lsp.trace.advisor.steps import STEPS
from jax_lsp.trace.compile_target import CompileTarget
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.service import TraceService, site_params


def site_request(
    service: TraceService,
    path: str | os.PathLike,
    line: int,
    column: int | None = None,
    *,
    interpreter: str | None = None,
    **site: Any,
) -> SiteRequest:
    """The requests about the site at 1-based ``line`` of ``path`` (`site_params`); ``site``:
    its ``example``, ``policies``, ``root``, ``import_root`` and ``cwd`` (the folder the user
    runs from, the CLI's: where the agent runs the example, first on its ``sys.path`` and first
    of the folders an example path is relative to)."""
    return SiteRequest(service, _advise_params(path, line, column, **site), interpreter)


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
    budget: int | None = None,
    cache: AnswerCache | None = None,
    progress: Callable[[StepEvent], None] | None = None,
    cancel: Cancel | None = None,
    keep: Callable[[Advice], None] | None = None,
    **site: Any,
) -> Advice:
    """The site's advice (`site_request`), waited for on the calling thread: its estimate;
    ``compile``: each candidate's step compiled for ``target`` (a TPU slice, from its topology)
    or, without one or for ``cpu``, the local device (`--compile`); ``run``: each candidate's
    step run on the local accelerator (`--run`); ``budget``: uncompiled, the suggestion for it
    checked by compiling (`fit.py`). Answers come from ``cache`` where it holds them;
    ``progress`` hears each step's, ``keep`` each step's advice; ``cancel`` stops it."""
    request = site_request(service, path, line, column, interpreter=interpreter, **site)
    plan = Plan(options or TraceOptions(), compile, target, run, budget)
    pipeline = Pipeline(request, plan, STEPS, cache=cache, progress=progress, cancel=cancel, keep=keep)
    return pipeline.run()


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
