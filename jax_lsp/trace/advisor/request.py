"""Asking the trace agent for advice on one site, with the site's example.

`advise()` sends an ``advise`` request through the trace's service (the same warm agent, a fork
per request, the timeout and memory limit of a trace); the answer becomes an `Advice`.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor.advice import Advice, relative
from jax_lsp.trace.advisor.setting import with_setting
from jax_lsp.trace.compile_target import CompileTarget
from jax_lsp.trace.options import TraceOptions
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
    also compile each candidate's step (`--compile`), for ``target`` (a TPU slice, from its
    topology) or, without one or for ``cpu``, the local device; the advice says which."""
    site = site_params(path, line, column, root, import_root)
    return service.submit(
        "advise",
        {
            **site,
            "example": example,
            "policies": list(policies),
            "cwd": os.path.realpath(cwd) if cwd else None,
            "compile": compile,
            "target": target.to_params() if compile and target is not None else None,
        },
        options or TraceOptions(),
        interpreter=interpreter,
        cwd=site["root"],
        answer=lambda answer: with_setting(
            replace(Advice.from_agent(answer, site["path"], line), target=target if compile else None),
            Path(site["root"]),
        ),
    )


def advise(service: TraceService, path: str | os.PathLike, line: int, **request: Any) -> Advice:
    """`submit_advise`, waited for."""
    return submit_advise(service, path, line, **request).result()
