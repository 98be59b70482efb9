"""Writing a policy for one site, from its advice to the outcome: the search, then its outcome
with the edits that give the site the written policy."""

from __future__ import annotations

import functools
import os
from concurrent.futures import Future
from typing import Any

from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.write.requests import SiteRequests
from jax_lsp.trace.advisor.write.search import Objective, Search, by_recompute, by_step_time
from jax_lsp.trace.advisor.write.site_edit import site_edits
from jax_lsp.trace.advisor.write.written import NOT_WRITTEN, WrittenPolicy, conclude
from jax_lsp.trace.service import TraceJob, TraceService


def write_policy(
    service: TraceService,
    workspace: Workspace,
    advice: Advice,
    budget: int,
    objective: Objective | None = None,
    **request: Any,
) -> WrittenPolicy:
    """The policy written for ``budget`` at the site of ``advice`` (advised with its named
    candidates compiled for ``request``'s target), ``request`` as `request.advise` takes it
    (``column``, ``example``, ``root``, ``import_root``, ``cwd``, ``interpreter``, ``options``,
    ``target``). ``objective``: what the search minimises (default: the step time the advisor ranks by,
    `search.by_step_time`, else `search.by_recompute`)."""
    if not advice.ok:
        return WrittenPolicy(budget, NOT_WRITTEN, f"the site could not be advised: {advice.message}", None)
    if not advice.compiled:
        return WrittenPolicy(budget, NOT_WRITTEN, "the named candidates were not compiled", None)
    requests = SiteRequests.of(service, advice.path, advice.line, **request)
    search = Search(requests, advice, budget, objective or by_step_time(advice) or by_recompute(advice)).run()
    edit = functools.partial(site_edits, workspace, advice, request.get("column"))
    return conclude(search, edit)


def written_job(
    service: TraceService,
    workspace: Workspace,
    path: str | os.PathLike,
    line: int,
    budget: int,
    **request: Any,
) -> TraceJob[WrittenPolicy]:
    """The site at ``line`` of ``path`` advised with every named candidate compiled, then its
    policy written for ``budget`` (the editor's "Write a policy for B"), on the calling thread:
    the job it returns is done."""
    advice = advise(service, path, line, compile=True, **request)
    done: Future = Future()
    done.set_result(write_policy(service, workspace, advice, budget, **request))
    return TraceJob(None, None, None, done)
