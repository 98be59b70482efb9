"""How a module spells ``functools.partial``, and the edits that import a module where the code
does not bind it: ``functools`` for the decorator form of a checkpoint function whose function is
a required argument (``@functools.partial(jax.checkpoint, policy=p)``), ``jax`` for a policy
written as ``jax.checkpoint_policies...`` in a module that imports only ``jax.numpy as jnp``."""

from __future__ import annotations

import ast

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.findings import Edit, Position, Span


def partial_name(module: Module, scope: Scope) -> str | None:
    """How `functools.partial` is spelled at `scope` through the module's imports, if it is."""
    spellings = []
    for name, bindings in module.scope.bindings.items():
        if len(bindings) != 1 or bindings[0].kind != "import" or scope.lookup(name)[0] is not bindings[0]:
            continue
        if bindings[0].target == "functools.partial":
            spellings.append((0, name))
        elif bindings[0].target == "functools":
            spellings.append((1, f"{name}.partial"))
    return min(spellings)[1] if spellings else None


def import_functools(module: Module) -> Edit:
    return import_module(module, "functools")


def jax_import_edits(module: Module, expression: str, scope: Scope | None = None) -> list[Edit]:
    """`import jax` where ``expression`` (a policy, a fix's text) reads ``jax.`` and, at ``scope``
    (the module's top level by default), ``jax`` is not the imported module: none otherwise."""
    if not expression.startswith("jax."):
        return []
    binding, _ = (scope or module.scope).lookup("jax")
    if binding is not None and binding.kind == "import" and binding.target == "jax":
        return []
    return [import_module(module, "jax")]


def import_module(module: Module, name: str) -> Edit:
    """Insert `import NAME` after the module docstring and `from __future__` imports."""
    body = module.source.tree.body
    skipped = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        skipped = 1
    while skipped < len(body) and _is_future_import(body[skipped]):
        skipped += 1
    last = body[skipped - 1] if skipped else None
    if skipped < len(body):
        following = body[skipped]
        line = min([following.lineno, *(d.lineno for d in getattr(following, "decorator_list", []))])
        if last is None or line > last.end_lineno:
            start = Position(line - 1, 0)
            return Edit(module.path, Span(start, start), f"import {name}\n")
    if last is None:
        return Edit(module.path, Span(Position(0, 0), Position(0, 0)), f"import {name}\n")
    end = module.source.span(last).end
    return Edit(module.path, Span(end, end), f"\nimport {name}")


def _is_future_import(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
