"""Checkpoints without a policy: ``jax.checkpoint(f)``, ``@jax.remat``, ``nn.remat(Block)``,
``@partial(jax.checkpoint, static_argnums=1)``, ``@nnx.remat``, ``eqx.filter_checkpoint(f)``.

They pass no ``policy=``, so JAX's default applies (``policy=None``, which JAX's remat treats as
``nothing_saveable``). The advisor advises them like any site, and `policy_edits` gives the edits
that pass a policy there, in the form each checkpoint function accepts: ``@jax.checkpoint``
(whose function is a required argument) becomes ``@functools.partial(jax.checkpoint,
policy=...)``, ``@nnx.remat`` becomes ``@nnx.remat(policy=...)``, a call gets ``policy=...`` as
its last argument.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, dotted
from jax_lsp.core.findings import Edit, Position, Span
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTIONS, PARTIAL, CheckpointFunction
from jax_lsp.core.policies.partial import import_functools, jax_import_edits, partial_name
from jax_lsp.core.policies.sites import FUNCTION_KEYWORDS, FUNCTION_NAMES, checkpoint_aliases
from jax_lsp.core.record import Record

_Definition = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")  # the fields holding statements


class DefaultSite(Record):
    """A checkpoint that passes no policy: a call of a checkpoint function (``form`` "call"), a
    ``functools.partial`` of one ("partial"), or one used as a decorator as it is ("decorator")."""

    __slots__ = ("module", "node", "function", "scope", "form")
    module: Module
    node: ast.expr  # the call, or the decorator expression
    function: CheckpointFunction
    scope: Scope
    form: str  # "call" | "partial" | "decorator"

    def __init__(self, module: Module, node: ast.expr, function: CheckpointFunction, scope: Scope, form: str):
        self._assign(module, node, function, scope, form)


def find_default_sites(module: Module) -> list[DefaultSite]:
    """The checkpoints of ``module`` that pass no policy (nor ``**kwargs``, which may hold one),
    in source order."""
    names = FUNCTION_NAMES | checkpoint_aliases(module)
    found = [
        site
        for call, scope in [*module.calls, *module.late_calls]
        if _last_name(call.func) in names
        for site in [_call_site(module, call, scope)]
        if site is not None
    ]
    for decorator, owner in _decorators(module.source.tree):
        if _last_name(decorator) not in names:
            continue
        scope = _scope_of(module, owner)
        function = CHECKPOINT_FUNCTIONS.get(module.qualname(decorator, scope) or "")
        if function is not None:
            found.append(DefaultSite(module, decorator, function, scope, "decorator"))
    return sorted(found, key=lambda s: (s.node.lineno, s.node.col_offset))


def _last_name(expr: ast.expr) -> str | None:
    parts = dotted(expr)
    return parts[-1] if parts else None


def _call_site(module: Module, call: ast.Call, scope: Scope) -> DefaultSite | None:
    if any(k.arg in ("policy", None) for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    ):
        return None
    qualname = module.qualname(call.func, scope)
    if qualname in PARTIAL:
        inner = CHECKPOINT_FUNCTIONS.get(module.qualname(call.args[0], scope) or "") if call.args else None
        return DefaultSite(module, call, inner, scope, "partial") if inner is not None else None
    function = CHECKPOINT_FUNCTIONS.get(qualname or "")
    if function is None:
        return None
    positional = function.policy_position if function.policy_position is not None else 1
    if len(call.args) > positional:
        return None  # a policy passed positionally: a site of its own
    has_function = bool(call.args) or any(k.arg in FUNCTION_KEYWORDS for k in call.keywords)
    if function.requires_function and not has_function:
        return None  # raises before any policy matters (JAX109)
    return DefaultSite(module, call, function, scope, "call")


def _decorators(tree: ast.AST) -> Iterator[tuple[ast.expr, ast.AST]]:
    """Each decorator that is not a call, with the node whose scope it is evaluated in. Only
    statement bodies are walked: a definition is never inside an expression."""
    stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
    while stack:
        node, owner = stack.pop()
        for field in _BODIES:
            for child in getattr(node, field, None) or ():
                if isinstance(child, _Definition):
                    yield from ((d, owner) for d in child.decorator_list if not isinstance(d, ast.Call))
                    stack.append((child, child))
                else:
                    stack.append((child, owner))


def _scope_of(module: Module, owner: ast.AST) -> Scope:
    if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return module.function_scope(owner)
    return module.scope_of.get(id(owner)) or module.scope


def policy_edits(site: DefaultSite, policy: str) -> list[Edit]:
    """The edits that pass ``policy`` (an expression) at ``site``, with `import jax` where the
    policy reads ``jax.`` and the site's scope does not bind it."""
    return [*jax_import_edits(site.module, policy, site.scope), *_passing(site, policy)]


def _passing(site: DefaultSite, policy: str) -> list[Edit]:
    module, node = site.module, site.node
    source = module.source
    if isinstance(node, ast.Call):
        arguments: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
        if arguments:
            end = max(source.span(a).end for a in arguments)
            return [Edit(module.path, Span(end, end), f", policy={policy}")]
        end = source.span(node).end  # `@nnx.remat()`: before its `)`
        inside = Position(end.line, end.column - 1)
        return [Edit(module.path, Span(inside, inside), f"policy={policy}")]
    written = source.segment(node)
    if not site.function.requires_function:  # `@nnx.remat(policy=p)` returns the decorator
        return [Edit(module.path, source.span(node), f"{written}(policy={policy})")]
    edits = []
    partial = partial_name(module, site.scope)
    if partial is None:
        partial = "functools.partial"
        edits.append(import_functools(module))
    edits.append(Edit(module.path, source.span(node), f"{partial}({written}, policy={policy})"))
    return edits
