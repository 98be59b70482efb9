"""Which parameters a function's body asks Python for the truth of (JAX119): the test of an
`if`, `while`, conditional expression, `assert` or comprehension `if`, an operand of `not` or of
`and`/`or`, the argument of `bool()`; or hands to a callee that asks it: a Flax layer that tests
a flag (`nn.Dropout`'s `deterministic`), or a function or lambda bound to a name."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, iter_parameters
from jax_lsp.core.jax_api import FLAG_TESTING_LAYERS, FlagTestingLayer
from jax_lsp.core.policies.checkpointed import CheckpointedNode

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The nodes that can ask for a truth value (`_truth_tests`, a layer's call).
_ASKING = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension, ast.UnaryOp, ast.BoolOp, ast.Call)
# The last names of the layers that test a flag (`Dropout`), resolved only where one is called.
_LAYER_NAMES = frozenset(name.rsplit(".", 1)[1] for name in FLAG_TESTING_LAYERS)
# How deep callees bound to names are followed.
_CALLEES_FOLLOWED = 3


def tested_parameters(
    module: Module, function: CheckpointedNode, candidates: set[str], depth: int = 0
) -> dict[str, tuple[str, ast.expr]]:
    """Each candidate parameter whose truth value the function's own body (its lambdas
    included) asks, or hands to a callee that asks it (a Flax layer, a function), with what asks
    it first and where; a parameter the body assigns again is left out."""
    body: list[ast.AST] = [function.body] if isinstance(function, ast.Lambda) else list(function.body)
    callees = _FlagCallees(module, function, candidates, depth)
    assigned: set[str] = set()
    asked: dict[str, tuple[str, ast.expr]] = {}
    for node in _walk_own(body, candidates):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                assigned.add(node.id)
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            assigned.update(node.names)
        if not isinstance(node, _ASKING):
            continue
        for asked_by, test in [*_truth_tests(node), *callees.asked(node)]:
            for name in _truth_operands(test):
                if name.id in candidates and (name.id not in asked or _before(name, asked[name.id][1])):
                    asked[name.id] = (asked_by, name)
    found = {name: use for name, use in asked.items() if name not in assigned}
    return dict(sorted(found.items(), key=lambda item: (item[1][1].lineno, item[1][1].col_offset)))


class _FlagCallees:
    """The candidates handed as a flag, in one function's body, to a callee that tests it in
    Python: a Flax layer (`nn.Dropout(rate)(x, deterministic=flag)`, the flag given to the layer
    itself, or a layer bound to a name and called through it, a conditional expression's branch
    included), or a function or lambda bound to a name whose control flow the parameter that
    gets the flag decides. A callee's name is resolved only where a candidate is handed to it."""

    def __init__(self, module: Module, function: CheckpointedNode, candidates: set[str], depth: int) -> None:
        self.module = module
        self.function = function
        self.candidates = candidates
        self.depth = depth
        self._scope: Scope | None = None

    @property
    def scope(self) -> Scope:
        if self._scope is None:
            self._scope = self.module.function_scope(self.function)
        return self._scope

    def asked(self, node: ast.AST) -> Iterator[tuple[str, ast.expr]]:
        if not isinstance(node, ast.Call) or not self._hands_candidate(node):
            return
        func = node.func
        if isinstance(func, ast.Call):  # `Layer(...)(x, flag)`
            yield from self._layer(self.module, func, self.scope, node)
        yield from self._layer(self.module, node, self.scope, None)  # `Layer(..., flag=flag)`
        if isinstance(func, ast.Name) and self.depth < _CALLEES_FOLLOWED:
            found = self.module.definition(func, self.scope)
            if found is not None:
                yield from self._bound(*found, node, func.id, 0)

    def _hands_candidate(self, call: ast.Call) -> bool:
        given = [*call.args, *(k.value for k in call.keywords)]
        return any(n.id in self.candidates for value in given for n in _truth_operands(value))

    def _layer(
        self, module: Module, constructor: ast.Call, scope: Scope, call: ast.Call | None
    ) -> Iterator[tuple[str, ast.expr]]:
        """The flag that `constructor`, a Flax layer's, or `call`, that layer's call, is given."""
        func = constructor.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _LAYER_NAMES:
            return
        layer = FLAG_TESTING_LAYERS.get(module.qualname(func, scope) or "")
        if layer is None or _zero(constructor, layer.skipped_by):
            return
        given = (
            _argument(constructor, layer.flag, None)
            if call is None
            else _argument(call, layer.flag, layer.call_position)
        )
        if given is not None:
            yield _asked_by(name, layer), given

    def _bound(
        self, module: Module, value: ast.AST, scope: Scope, call: ast.Call, name: str, step: int
    ) -> Iterator[tuple[str, ast.expr]]:
        """What the callee `value`, bound to `name` and called by `call`, asks of what it gets."""
        if step > _CALLEES_FOLLOWED:
            return
        if isinstance(value, ast.IfExp):
            for branch in (value.body, value.orelse):
                yield from self._bound(module, branch, scope, call, name, step + 1)
        elif isinstance(value, ast.Name):
            found = module.definition(value, scope)
            if found is not None:
                yield from self._bound(*found, call, name, step + 1)
        elif isinstance(value, ast.Call):
            yield from self._layer(module, value, scope, call)
        elif isinstance(value, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from self._function(module, value, call, name)

    def _function(
        self, module: Module, function: CheckpointedNode, call: ast.Call, name: str
    ) -> Iterator[tuple[str, ast.expr]]:
        """Each flag `call` hands to a parameter of `function` whose truth its body asks."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        given = {p.arg: a for p, a in zip(positional, call.args)}
        named = {p.arg for p in [*positional[len(args.posonlyargs) :], *args.kwonlyargs]}
        given.update((k.arg, k.value) for k in call.keywords if k.arg in named)
        flags = {
            parameter: value
            for parameter, value in given.items()
            if any(n.id in self.candidates for n in _truth_operands(value))
        }
        if not flags:
            return
        inner = tested_parameters(module, function, set(flags), self.depth + 1)
        for parameter, (asked_by, use) in inner.items():
            callee = f"`{name}`" if isinstance(function, ast.Lambda) else f"`{function.name}`"
            where = "" if module is self.module else f" of {os.path.basename(module.path)}"
            yield (
                f"goes to {callee}, where `{parameter}` {asked_by} (line {use.lineno}{where})",
                flags[parameter],
            )


def _argument(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None and position is not None and len(call.args) > position:
        given = call.args[position]
    return given


def _zero(constructor: ast.Call, parameter: str) -> bool:
    """Whether the layer is made with `parameter` a literal 0 (the first positional argument)."""
    value = _argument(constructor, parameter, 0)
    return isinstance(value, ast.Constant) and type(value.value) in (int, float) and value.value == 0


def _asked_by(name: str, layer: FlagTestingLayer) -> str:
    return f"goes to a `{name}` as `{layer.flag}` (tested in Python unless its `{layer.skipped_by}` is 0)"


def _before(node: ast.expr, other: ast.expr) -> bool:
    return (node.lineno, node.col_offset) < (other.lineno, other.col_offset)


def _walk_own(body: Iterable[ast.AST], candidates: set[str]) -> Iterator[ast.AST]:
    """The nodes of a function's body and of its lambdas (called where they are written, as a
    rule), not entering the functions and classes defined in it, nor a lambda whose parameters
    hide a candidate."""

    def entered(node: ast.AST) -> bool:
        if isinstance(node, ast.Lambda):
            return not any(p.arg in candidates for p in iter_parameters(node.args))
        return not isinstance(node, _NESTED)

    todo = [node for node in body if entered(node)]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if entered(child))


def _truth_tests(node: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """The expressions whose truth value `node` asks, with what asks it."""
    if isinstance(node, ast.If):
        yield "decides an `if`", node.test
    elif isinstance(node, ast.While):
        yield "decides a `while`", node.test
    elif isinstance(node, ast.IfExp):
        yield "decides a conditional expression", node.test
    elif isinstance(node, ast.Assert):
        yield "decides an `assert`", node.test
    elif isinstance(node, ast.comprehension):
        for condition in node.ifs:
            yield "decides a comprehension's `if`", condition
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "decides a `not`", node.operand
    elif isinstance(node, ast.BoolOp):  # the last operand is returned, not asked
        for value in node.values[:-1]:
            yield f"decides an `{'and' if isinstance(node.op, ast.And) else 'or'}`", value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool":
        yield from (("decides a `bool()`", argument) for argument in node.args[:1])


def _truth_operands(test: ast.expr) -> Iterator[ast.Name]:
    """The names whose truth value asking `test`'s asks (through `not`, and every operand of
    `and`/`or`, since the result's truth is asked too)."""
    if isinstance(test, ast.Name):
        yield test
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _truth_operands(test.operand)
    elif isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _truth_operands(value)
