"""The sites the advisor advises in a file: every `policy=` site, and every checkpoint that
passes no policy (JAX's default; `core.policies.default_sites`), which its quick fix gives one."""

from __future__ import annotations

import ast

from jax_lsp.core import Edit, Position
from jax_lsp.core.policies.default_sites import find_default_sites, policy_edits
from jax_lsp.core.policies.partial import jax_import_edits
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


def anchor_of_line(workspace: Workspace, path: str, line: int) -> PolicyAnchor | None:
    """The site that a 0-based ``line`` names: the `advise_anchors` anchor on it, else the one
    whose checkpoint call spans it (from ``jax.remat(`` to its closing parenthesis, the innermost
    such call), as ``grep`` finds a call's first line while its ``policy=`` is below."""
    anchors = advise_anchors(workspace, path)
    on_line = [a for a in anchors if a.span.start.line == line]
    if on_line:
        return on_line[0]
    module = workspace.load(path)
    if module is None:
        return None
    by_start = {a.span.start: a for a in anchors}
    spans = []  # (the call's span, its anchor) of each call that holds an anchor
    for call, _ in [*module.calls, *module.late_calls]:
        held = [module.source.span(k.value).start for k in call.keywords if k.arg == "policy"]
        held.append(module.source.span(call.func).start)  # a checkpoint without a policy
        anchor = next((by_start[start] for start in held if start in by_start), None)
        if anchor is not None:
            spans.append((module.source.span(call), anchor))
    inside = [(span, anchor) for span, anchor in spans if span.start.line <= line <= span.end.line]
    return max(inside, key=lambda found: found[0].start)[1] if inside else None


def importing_jax(workspace: Workspace, edits: list[Edit], policy: str) -> list[Edit]:
    """``edits`` with `import jax` at the top of each file where one writes ``policy`` and that
    reads ``jax.`` while the module does not import it (`partial.jax_import_edits`); a value
    written instead (a key, haliax's config) reads no ``jax.``."""
    written = policy.split("(", 1)[0]  # as laid out over lines, the call's name stays whole
    imports = []
    for path in sorted({e.path for e in edits if written in e.new_text}):
        module = workspace.load(path)
        imports += jax_import_edits(module, policy) if module is not None else []
    return [*imports, *edits]


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
