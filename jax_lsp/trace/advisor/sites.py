"""The sites the advisor advises in a file: every `policy=` site, and every checkpoint that
passes no policy (JAX's default; `core.policies.default_sites`), which its quick fix gives one."""

from __future__ import annotations

import ast

from jax_lsp.core import Edit, Position
from jax_lsp.core.policies.checkpointed import checkpointed
from jax_lsp.core.policies.default_sites import find_default_sites, policy_edits
from jax_lsp.engine import Workspace
from jax_lsp.trace.locations import PolicyAnchor, policy_anchors

DEFAULT = "default"  # a PolicyAnchor's kind for a checkpoint without a policy


def advise_anchors(workspace: Workspace, path: str) -> list[PolicyAnchor]:
    """The file's `policy=` sites (at their value) and its checkpoints without a policy (at the
    called or decorating name: ``jax.checkpoint`` of ``jax.checkpoint(f)``), in source order."""
    anchors = [a for a in policy_anchors(workspace, path) if a.kind == "site"]
    module = workspace.load(path)
    if module is not None:
        for site in find_default_sites(module):
            named = site.node.func if isinstance(site.node, ast.Call) else site.node
            anchors.append(PolicyAnchor(module.path, module.source.span(named), DEFAULT))
    return sorted(anchors, key=lambda a: a.span.start)


def default_policy_edits(workspace: Workspace, path: str, start: Position, policy: str) -> list[Edit] | None:
    """The edits that pass ``policy`` at the checkpoint without a policy that starts at ``start``
    (0-based, code points) in the file as it is now; None when there is none there."""
    module = workspace.load(path)
    if module is None:
        return None
    for site in find_default_sites(module):
        if module.source.span(site.node).start == start:
            return policy_edits(site, policy)
    return None


def checkpointed_lines(workspace: Workspace, path: str, start: Position) -> tuple[int, int] | None:
    """The first and last lines (0-based) of the function that the site anchored at ``start``
    (an `advise_anchors` span's start) checkpoints, where ``path`` writes it; None otherwise."""
    module = workspace.load(path)
    if module is None:
        return None
    span = module.source.span
    for call, scope in [*module.calls, *module.late_calls]:
        anchors = [span(call.func), *(span(k.value) for k in call.keywords if k.arg == "policy")]
        if any(a.start == start for a in anchors):
            found = next(checkpointed(module, [(call, scope)]), None)
            if found is None or found.defined_in.path != module.path:
                return None
            return found.function.lineno - 1, (found.function.end_lineno or found.function.lineno) - 1
    for node in ast.walk(module.source.tree):  # a bare `@jax.checkpoint`: the function below it
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            span(d).start == start for d in node.decorator_list
        ):
            return node.lineno - 1, (node.end_lineno or node.lineno) - 1
    return None
