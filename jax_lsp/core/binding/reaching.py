"""The assignments of a name that can reach one use of it, for a name bound more than once.

`def auto_remat(module, policy=None): if isinstance(policy, str): policy = get_policy(policy)`
then `nn.remat(module, policy=policy)`: the parameter or the policy looked up may reach the
site. Straight-line code is followed as it runs: an assignment in a block that holds the use
(or a block around it) hides what was bound before it; one in a branch beside it does not.
Only names bound by parameters, plain assignments and `def`s are followed (a factory that
defines `policy` in each branch and returns it); a loop target or an import among the bindings
leaves the name unknown.
"""

from __future__ import annotations

import ast

from jax_lsp.core.binding.scopes import Scope

FunctionDef = ast.FunctionDef | ast.AsyncFunctionDef

_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def reaching_values(use: ast.Name, scope: Scope) -> list[ast.expr | FunctionDef] | None:
    """The values assigned to `use.id` (or the functions defined as it) that may be what `use`
    reads (a parameter's value is not known and adds nothing); None when the name is bound once
    or some other way."""
    owner: Scope | None = scope
    while owner is not None and use.id not in owner.bindings:
        owner = owner.parent
    if owner is None:
        return None
    bindings = owner.bindings[use.id]
    if len(bindings) < 2 or any(b.kind not in ("param", "assign", "def") for b in bindings):
        return None
    hiding = _hiding_assignments(owner.node, use)
    reaching: list[ast.expr | FunctionDef] = []
    for binding in bindings:  # in the order they are written; parameters first
        value = binding.node
        if not isinstance(value, (ast.expr, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue  # a parameter (its `ast.arg`): what it holds is not known
        if value.lineno >= use.lineno:
            continue  # after the use (a loop that reads it again is not followed)
        if id(value) in hiding:
            reaching = []
        reaching.append(value)
    return reaching


def _hiding_assignments(root: ast.AST, use: ast.Name) -> set[int]:
    """The values of the assignments that run on every path to `use`: the plain statements
    before it in each block from the scope's body down to the statement that holds it."""
    hiding: set[int] = set()
    block = getattr(root, "body", None)
    while isinstance(block, list):
        inner = None
        for statement in block:
            if statement.lineno > use.lineno:
                break
            if statement.end_lineno >= use.lineno:
                inner = statement
                break
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                hiding.add(id(statement.value))
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                hiding.add(id(statement))
        if inner is None or isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        block = _block_holding(inner, use)
    return hiding


def _block_holding(statement: ast.stmt, use: ast.Name) -> list[ast.stmt] | None:
    for name in _BLOCKS:
        for item in getattr(statement, name, None) or ():
            statements = item.body if isinstance(item, ast.ExceptHandler) else [item]
            if statements and statements[0].lineno <= use.lineno <= _last_line(statements[-1]):
                if isinstance(item, ast.ExceptHandler):
                    return item.body
                block: list[ast.stmt] = getattr(statement, name)
                return block
    if isinstance(statement, ast.Match):
        for case in statement.cases:
            if case.body and case.body[0].lineno <= use.lineno <= _last_line(case.body[-1]):
                return case.body
    return None


def _last_line(statement: ast.stmt) -> int:
    return statement.end_lineno or statement.lineno  # end_lineno is set on every parsed node
