"""The agent's requests of a policy's writing: traces of many candidates at once, and one
candidate's compile, each with the user's files as a set of tags would leave them."""

from __future__ import annotations

import os
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.compile_target import CompileTarget
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.result import TraceResult
from jax_lsp.trace.service import TraceService, site_params


@dataclass(frozen=True)
class Overlay:
    """The user's files as tags would leave them: each file's text, and the site's line there
    (an import added above it moves it down)."""

    texts: dict[str, str]  # real path -> the file's text with the tags
    site_line: int


@dataclass(frozen=True)
class SiteRequests:
    """The requests about one site: what every one of them tells the agent (the site, its example,
    where to run), the interpreter, the limits, and the target of its compiles."""

    service: TraceService
    params: dict[str, Any]
    interpreter: str | None
    options: TraceOptions
    target: CompileTarget | None

    @classmethod
    def of(
        cls,
        service: TraceService,
        path: str | os.PathLike,
        line: int,
        column: int | None = None,
        *,
        example: str | None,
        root: str | os.PathLike | None = None,
        import_root: str | os.PathLike | None = None,
        cwd: str | os.PathLike | None = None,
        interpreter: str | None = None,
        options: TraceOptions | None = None,
        target: CompileTarget | None = None,
    ) -> SiteRequests:
        """The requests of the site at 1-based ``line`` of ``path``, as `request.advise` takes it."""
        params = {
            **site_params(path, line, column, root, import_root),
            "example": example,
            "cwd": os.path.realpath(cwd) if cwd else None,
        }
        return cls(service, params, interpreter, options or TraceOptions(), target)

    @property
    def path(self) -> str:
        return str(self.params["path"])

    @property
    def line(self) -> int:
        return int(self.params["line"])

    @property
    def root(self) -> str:
        return str(self.params["root"])

    def trace(self, policies: list[str], overlay: Overlay | None = None) -> dict[str, Any] | TraceResult:
        """The agent's answer to advising ``policies`` (none compiled), as it came: its residuals
        carry the spans of the expressions that made them. Under the compile's limits: it traces
        many candidates."""
        return self._ask(self.options.for_compile(), policies, overlay).result()

    def compile(self, policy: str, overlay: Overlay | None = None) -> PolicyAdvice | str:
        """``policy``'s entry, its step compiled for the target, with the files of ``overlay``; or
        why there is none (the agent's or the compile's error)."""
        target = {"target": self.target.to_params() if self.target is not None else None}
        options = self.options.for_compile()
        answer = self._ask(options, [policy], overlay, compile=True, only=policy, **target).result()
        advice = Advice.from_agent(answer, self.path, self.line)
        if not advice.ok:
            return f"{advice.status}: {advice.message}"
        entry = next((p for p in advice.policies if p.policy == policy), None)
        if entry is None:
            return "the agent did not advise it"
        return entry.error or (entry.compile_error if entry.compiled is None else None) or entry

    def _ask(
        self, options: TraceOptions, policies: list[str], overlay: Overlay | None, **more: Any
    ) -> Future:
        params = {**self.params, "policies": policies, **more}
        if overlay is not None:
            params.update(overlay=overlay.texts, line=overlay.site_line)
        job = self.service.submit(
            "advise",
            params,
            options,
            interpreter=self.interpreter,
            cwd=params["root"],
            answer=_as_is,
        )
        return job.future


def _as_is(answer: dict | TraceResult) -> dict | TraceResult:
    return answer
