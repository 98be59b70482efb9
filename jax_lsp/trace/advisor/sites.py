"""The sites the advisor advises in a file: every `policy=` site, and every checkpoint that
passes no policy (JAX's default; `core.policies.default_sites`), which its quick fix gives one."""

from __future__ import annotations

import ast

from jax_lsp.core import Edit, Position
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
