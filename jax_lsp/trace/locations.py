"""Where a trace can start: every policy site of a file and the policies it resolves to there."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from jax_lsp.core import Span
from jax_lsp.core.policies.resolve import PolicyFunction
from jax_lsp.engine import Workspace


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
