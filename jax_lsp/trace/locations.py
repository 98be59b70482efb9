"""Where a trace can start: every policy site of a file and the policies it resolves to there."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from jax_lsp.core import Span
from jax_lsp.core.policies.default_sites import find_default_sites
from jax_lsp.core.policies.resolve import PolicyFunction
from jax_lsp.engine import Workspace
from jax_lsp.trace.result import TraceResult, TraceStatus


@dataclass(frozen=True)
class PolicyAnchor:
    path: str
    span: Span  # 0-based, code points: where the code lens goes
    kind: str  # "site" | "def" | "lambda"

    @property
    def line(self) -> int:
        """1-based, as the agent takes it."""
        return self.span.start.line + 1

    @property
    def column(self) -> int:
        return self.span.start.column


def policy_anchors(workspace: Workspace, path: str) -> list[PolicyAnchor]:
    """The sites of the file, the ``def``/lambda policies they reach there, and the functions of the
    file that other modules' sites use as policies; one per position."""
    module = workspace.load(path)
    if module is None:
        return []
    anchors: dict[tuple[int, int], PolicyAnchor] = {}
    for site, targets in workspace.sites(module):
        if site.value is not None:
            span = module.source.span(site.value)
            anchors.setdefault((span.start.line, span.start.column), PolicyAnchor(module.path, span, "site"))
        for target in targets:
            if isinstance(target, PolicyFunction) and target.module.path == module.path:
                node = target.node
                if isinstance(node, ast.Lambda):
                    span, kind = module.source.span(node), "lambda"
                else:
                    span, kind = module.source.name_span(node), "def"
                anchors.setdefault(
                    (span.start.line, span.start.column), PolicyAnchor(module.path, span, kind)
                )
    # Functions defined here that sites in other modules use as policies (the core finds them
    # once the workspace is indexed).
    for definition in ast.walk(module.source.tree):
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            span = module.source.name_span(definition)
            key = (span.start.line, span.start.column)
            if key not in anchors and workspace.describe_policy(path, *key) is not None:
                anchors[key] = PolicyAnchor(module.path, span, "def")
    return sorted(anchors.values(), key=lambda a: (a.span.start, a.kind))


def default_checkpoint_on(workspace: Workspace, path: str, line: int) -> str | None:
    """The checkpoint on 1-based ``line`` that passes no policy (``nn.remat(TBlock)``), where
    no policy can be traced on that line; None otherwise."""
    module = workspace.load(path)
    if module is None or any(a.line == line for a in policy_anchors(workspace, path)):
        return None
    for site in find_default_sites(module):
        if site.node.lineno <= line <= (site.node.end_lineno or site.node.lineno):
            return ast.unparse(site.node)
    return None


def no_policy_result(checkpoint: str) -> TraceResult:
    """The trace's answer at a checkpoint without a policy: nothing ran, nothing is wrong."""
    return TraceResult(
        status=TraceStatus.NO_POLICY,
        message=(
            f"{checkpoint} passes no policy, so JAX's default is used (policy=None: it keeps what"
            " nothing_saveable keeps); there is no policy to trace (the advisor shows what it keeps)."
        ),
    )
