"""The tests that hold wherever a statement or expression runs: the `if` branches around it
and the early exits before it (`if not names: return ...`, `assert names`), within one function
or module body, each split into the plain tests it is made of (`a and b`, `not a`).

Among them, the paths JAX never takes: those where the module JAX came from is None, taken
from a lazy-import helper (`jax = _get_jax()`, which returns None where the import fails) or
left None by a failed import (`try: import jax` / `except ImportError: jax = None`). Nothing
there is handed to JAX.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.return_paths import ReturnPaths, return_paths, terminates
from jax_lsp.core.binding.scopes import FunctionNode, Scope

_BLOCKS = ("body", "orelse", "finalbody")
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def holding_tests(root: ast.AST, node: ast.AST) -> Iterator[tuple[ast.expr, bool]]:
    """(test, truth): each test known to be `truth` where `node`, written directly in `root`'s
    body (not in a function nested there), runs."""
    block = getattr(root, "body", None)
    while isinstance(block, list):
        inner = None
        for statement in block:
            if _holds(statement, node):
                inner = statement
                break
            yield from _exits(statement)
        if inner is None or isinstance(inner, _NESTED):
            return
        if isinstance(inner, ast.If):
            if _in_block(inner.body, node):
                yield from plain_tests(inner.test, True)
                block = inner.body
            elif _in_block(inner.orelse, node):
                yield from plain_tests(inner.test, False)
                block = inner.orelse
            else:
                return  # in the test itself
            continue
        block = _block_holding(inner, node)


def paths_with_jax(module: Module, node: FunctionNode) -> ReturnPaths:
    """The function's return paths but those where the module JAX came from is None."""
    paths = return_paths(node)
    if not paths.returns:
        return paths
    scope = module.function_scope(node)
    if not any(_jax_or_none(module, name, scope) for name in _tested_names(node)):
        return paths  # no test reads JAX's module: saves a walk up the tests per return
    return paths.replace(returns=tuple(r for r in paths.returns if not _without_jax(module, node, scope, r)))


def _tested_names(node: ast.AST) -> set[str]:
    """The names that a test in ``node`` reads bare or compares with something."""
    names = set()
    for child in ast.walk(node):
        if isinstance(child, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            for test, _ in plain_tests(child.test, True):
                test = test.left if isinstance(test, ast.Compare) else test
                if isinstance(test, ast.Name):
                    names.add(test.id)
    return names


def _without_jax(module: Module, root: ast.AST, scope: Scope, node: ast.AST) -> bool:
    for test, truth in holding_tests(root, node):
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_none(test.comparators[0]):
            if isinstance(test.ops[0], (ast.IsNot, ast.NotEq)):
                truth = not truth
            elif not isinstance(test.ops[0], (ast.Is, ast.Eq)):
                continue
            test, truth = test.left, not truth  # `x is None` true: `x` false
        if not truth and isinstance(test, ast.Name) and _jax_or_none(module, test.id, scope):
            return True
    return False


def _jax_or_none(module: Module, name: str, scope: Scope) -> bool:
    """Whether `name` holds a module of JAX, or None where importing it failed."""
    owner: Scope | None = scope
    while owner is not None and name not in owner.bindings:
        owner = owner.parent
    if owner is None:
        return False
    imported = False
    for binding in owner.bindings[name]:
        value = binding.node
        if binding.kind == "import":
            target = binding.target
        elif binding.kind == "assign" and isinstance(value, ast.expr) and _is_none(value):
            continue
        elif binding.kind == "assign" and isinstance(value, ast.Call) and not (value.args or value.keywords):
            target = module.lazy_import(value.func, owner) or ""
        else:
            return False
        if not _of_jax(target):
            return False
        imported = True
    return imported


def _of_jax(qualname: str) -> bool:
    return qualname == "jax" or qualname.startswith("jax.")


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def plain_tests(test: ast.expr, truth: bool) -> Iterator[tuple[ast.expr, bool]]:
    """`test` having `truth`, as the tests it implies: both sides of a true `and` (of a false
    `or`), the operand of `not` with the other truth, else the test itself."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from plain_tests(test.operand, not truth)
    elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if truth else ast.Or):
        for value in test.values:
            yield from plain_tests(value, truth)
    else:
        yield test, truth


def _exits(statement: ast.stmt) -> Iterator[tuple[ast.expr, bool]]:
    """What running past `statement` shows: `if t: return` that `t` is false, `assert t` that
    it is true."""
    if isinstance(statement, ast.Assert):
        yield from plain_tests(statement.test, True)
    elif isinstance(statement, ast.If):
        if terminates(statement.body):
            yield from plain_tests(statement.test, False)
        elif statement.orelse and terminates(statement.orelse):
            yield from plain_tests(statement.test, True)


def _holds(statement: ast.stmt, node: ast.AST) -> bool:
    start = (statement.lineno, statement.col_offset)
    end = (statement.end_lineno, statement.end_col_offset)
    return start <= (node.lineno, node.col_offset) and (node.end_lineno, node.end_col_offset) <= end  # type: ignore[attr-defined]


def _in_block(block: list[ast.stmt], node: ast.AST) -> bool:
    return any(_holds(statement, node) for statement in block)


def _block_holding(statement: ast.stmt, node: ast.AST) -> list[ast.stmt] | None:
    blocks: list[list[ast.stmt]] = [getattr(statement, name, None) or [] for name in _BLOCKS]
    blocks += [handler.body for handler in getattr(statement, "handlers", None) or ()]
    blocks += [case.body for case in getattr(statement, "cases", None) or ()]
    return next((block for block in blocks if _in_block(block, node)), None)
