"""What kind of value an expression in a policy evaluates to, as far as the source tells."""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.jax_api import (
    NUMPY_MODULES,
    NUMPY_VALUED_FUNCTIONS,
    OFFLOADABLE,
    POLICY_FACTORIES,
    RECOMPUTE,
    SAVEABLE,
    policy_member,
)


class Kind(enum.Enum):
    NONE = "None"
    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    STR = "str"
    CONTAINER = "container"
    NUMPY = "NumPy value"
    SAVEABLE = "Saveable"
    RECOMPUTE = "Recompute"
    OFFLOADABLE = "Offloadable(...)"
    OFFLOADABLE_CLASS = "the class Offloadable"
    POLICY = "a policy"  # a function JAX would call, not a decision
    UNKNOWN = "unknown"


_BOOL_BUILTINS = {"bool", "isinstance", "issubclass", "callable", "hasattr", "all", "any"}
_CONTAINERS = (
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def leaves(expr: ast.expr, truth: bool | None = None) -> Iterator[ast.expr]:
    """The expressions a value can come from: both branches of `a if c else b`, and each operand
    of `a or b` / `a and b` that can be the result: the last one, and an earlier one when it
    ends the chain (`or` stops at a true operand, `and` at a false one). So `x or None` can be
    `None`, while the `None` of `None or x` never is, nor the `c` of `(c and Saveable) or
    Recompute`. `truth`: the truth value the result must have to get this far (None: any)."""
    if isinstance(expr, ast.IfExp):
        yield from leaves(expr.body, truth)
        yield from leaves(expr.orelse, truth)
    elif isinstance(expr, ast.BoolOp):
        ends_chain = isinstance(expr.op, ast.Or)  # the truth of an operand that is the result
        *first, last = expr.values
        if truth is None or truth is ends_chain:
            for operand in first:
                yield from leaves(operand, ends_chain)
        yield from leaves(last, truth)
    elif not (truth is not None and isinstance(expr, ast.Constant) and bool(expr.value) is not truth):
        yield expr


def is_builtin(name: str, scope: Scope) -> bool:
    binding, owner = scope.lookup(name)
    return binding is None and owner is None


def classify(module: Module, expr: ast.expr, scope: Scope) -> Kind:
    if isinstance(expr, ast.Constant):
        value = expr.value
        if value is None:
            return Kind.NONE
        if isinstance(value, bool):
            return Kind.BOOL
        if isinstance(value, int):
            return Kind.INT
        if isinstance(value, (float, complex)):
            return Kind.FLOAT
        if isinstance(value, (str, bytes)):
            return Kind.STR
        return Kind.UNKNOWN
    if isinstance(expr, ast.JoinedStr):
        return Kind.STR
    if isinstance(expr, _CONTAINERS):
        return Kind.CONTAINER
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return Kind.BOOL
    if isinstance(expr, ast.Compare):
        operands = [expr.left, *expr.comparators]
        if any(numpy_valued(module, o, scope) for o in operands):
            return Kind.NUMPY
        return Kind.BOOL
    if isinstance(expr, ast.BoolOp):
        kinds = {classify(module, v, scope) for v in expr.values}
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
    if numpy_valued(module, expr, scope):
        return Kind.NUMPY
    if isinstance(expr, ast.Call):
        if (
            isinstance(expr.func, ast.Name)
            and expr.func.id in _BOOL_BUILTINS
            and is_builtin(expr.func.id, scope)
        ):
            return Kind.BOOL
        qualname = module.qualname(expr.func, scope)
        if qualname in OFFLOADABLE:
            return Kind.OFFLOADABLE
        if policy_member(qualname) in POLICY_FACTORIES:
            return Kind.POLICY  # `save_only_these_names("a")` makes a policy
        return Kind.UNKNOWN
    if isinstance(expr, ast.Lambda):
        return Kind.POLICY
    if isinstance(expr, (ast.Name, ast.Attribute)):
        qualname = module.qualname(expr, scope)
        if policy_member(qualname) or _names_function(module, expr, scope):
            return Kind.POLICY
        if qualname in SAVEABLE:
            return Kind.SAVEABLE
        if qualname in RECOMPUTE:
            return Kind.RECOMPUTE
        if qualname in OFFLOADABLE:
            return Kind.OFFLOADABLE_CLASS
    return Kind.UNKNOWN


def _names_function(module: Module, expr: ast.expr, scope: Scope) -> bool:
    """`expr` is a name bound to a `def` or a lambda: a function object, never a decision."""
    found = module.definition(expr, scope)
    return found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))


def numpy_valued(module: Module, expr: ast.expr, scope: Scope) -> bool:
    """A NumPy/jax.numpy scalar or array: np.prod(...), jnp.any(...), arithmetic on them."""
    if isinstance(expr, ast.Call):
        qualname = module.qualname(expr.func, scope) or ""
        if qualname.startswith(NUMPY_MODULES) and qualname.rsplit(".", 1)[-1] in NUMPY_VALUED_FUNCTIONS:
            return True
        # A method of a NumPy value: np.asarray(x).any()
        if isinstance(expr.func, ast.Attribute):
            return numpy_valued(module, expr.func.value, scope)
        return False
    if isinstance(expr, ast.BinOp):
        return numpy_valued(module, expr.left, scope) or numpy_valued(module, expr.right, scope)
    if isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
        return numpy_valued(module, expr.operand, scope)
    return False
