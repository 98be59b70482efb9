"""What a function can return: its return statements, and whether it can fall off the end."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator

from jax_lsp.core.binding.scopes import FunctionNode
from jax_lsp.core.record import Record

if sys.version_info >= (3, 11):
    _TRY_STATEMENTS = (ast.Try, ast.TryStar)
else:
    _TRY_STATEMENTS = (ast.Try,)

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class ReturnPaths(Record):
    __slots__ = ("returns", "falls_off_end", "lambda_body")
    returns: tuple[ast.Return, ...]  # empty for a lambda
    falls_off_end: bool
    lambda_body: ast.expr | None

    def __init__(
        self, returns: tuple[ast.Return, ...], falls_off_end: bool, lambda_body: ast.expr | None = None
    ) -> None:
        self._assign(returns, falls_off_end, lambda_body)

    def values(self) -> Iterator[tuple[ast.Return | ast.expr, ast.expr | None]]:
        """(anchor node, returned expression or None for a bare `return`)."""
        if self.lambda_body is not None:
            yield self.lambda_body, self.lambda_body
        for statement in self.returns:
            yield statement, statement.value


def return_paths(node: FunctionNode) -> ReturnPaths:
    if isinstance(node, ast.Lambda):
        return ReturnPaths((), False, node.body)
    returns = tuple(_returns(node.body))
    return ReturnPaths(returns, not terminates(node.body))


def _returns(statements: list[ast.stmt]) -> Iterator[ast.Return]:
    stack: list[ast.AST] = list(reversed(statements))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
            continue
        if isinstance(node, _NESTED) or isinstance(node, ast.expr):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _is_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def _is_false(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and not test.value


def _breaks(statements: list[ast.stmt]) -> bool:
    """Whether a `break` in these statements leaves the loop that holds them."""
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            stack.extend(node.orelse)  # a break in the inner loop's body leaves only that loop
            continue
        if isinstance(node, _NESTED) or isinstance(node, ast.expr):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def terminates(statements: list[ast.stmt]) -> bool:
    """True when control cannot reach the end of this statement list."""
    return any(_statement_terminates(s) for s in statements)


def _statement_terminates(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Return, ast.Raise)):
        return True
    if isinstance(node, ast.Assert):
        return _is_false(node.test)
    if isinstance(node, ast.Expr):
        return _is_no_return_call(node.value)
    if isinstance(node, ast.If):
        if _is_true(node.test):
            return terminates(node.body)
        if _is_false(node.test):
            return terminates(node.orelse)
        return terminates(node.body) and terminates(node.orelse)
    if isinstance(node, ast.While):
        if _is_true(node.test):
            return not _breaks(node.body)
        return terminates(node.orelse) and not _breaks(node.body)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return terminates(node.orelse) and not _breaks(node.body)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return terminates(node.body)
    if isinstance(node, _TRY_STATEMENTS):
        if terminates(node.finalbody):
            return True
        normal = terminates(node.body) or terminates(node.orelse)
        return normal and all(terminates(h.body) for h in node.handlers)
    if isinstance(node, ast.Match):
        irrefutable = any(_irrefutable(case) for case in node.cases)
        return irrefutable and all(terminates(case.body) for case in node.cases)
    return False


def _irrefutable(case: ast.match_case) -> bool:
    if case.guard is not None:
        return False
    pattern = case.pattern
    while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern
    if isinstance(pattern, ast.MatchOr):
        return any(_irrefutable(ast.match_case(p, None, [])) for p in pattern.patterns)
    return isinstance(pattern, ast.MatchAs) and pattern.pattern is None


_NO_RETURN = {"sys.exit", "exit", "quit", "os._exit", "os.abort"}


def _is_no_return_call(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Name):
        return func.id in _NO_RETURN
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}" in _NO_RETURN
    return False
