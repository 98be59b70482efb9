"""The function a checkpoint call wraps, and how the call counts its `static_argnums` (JAX117, JAX119)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, walk_spanning
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTIONS, PARTIAL, STATIC_ARGNUMS_COUNTING, StaticArgnums
from jax_lsp.core.record import Record

_FUNCTION_KEYWORDS = ("fun", "f", "target")
STATIC_ARGNUMS = "static_argnums"

CheckpointedNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class Checkpointed(Record):
    """A call of a checkpoint function (or of `functools.partial` of one) whose counting of
    `static_argnums` is known, and the function it checkpoints, known from the source."""

    __slots__ = ("call", "wrapper", "function", "counts_first", "defined_in", "of_class")
    call: ast.Call
    wrapper: str  # the checkpoint function's qualified name
    function: CheckpointedNode
    counts_first: bool  # whether the function's first parameter (`self`) is argument 0
    defined_in: Module  # the module the function is written in
    of_class: bool  # whether a `Module` class was given (`function` is its `__call__`)

    def __init__(
        self,
        call: ast.Call,
        wrapper: str,
        function: CheckpointedNode,
        counts_first: bool,
        defined_in: Module,
        of_class: bool,
    ) -> None:
        self._assign(call, wrapper, function, counts_first, defined_in, of_class)

    @property
    def counting(self) -> StaticArgnums:
        return STATIC_ARGNUMS_COUNTING[self.wrapper]

    def keyword(self, name: str) -> ast.keyword | None:
        return next((k for k in self.call.keywords if k.arg == name), None)

    def positional(self) -> list[ast.arg]:
        """The parameters `static_argnums` counts, in order."""
        args = self.function.args
        positional = [*args.posonlyargs, *args.args]
        return positional if self.counts_first else positional[1:]


def checkpointed(module: Module, calls: Iterable[tuple[ast.Call, Scope]]) -> Iterator[Checkpointed]:
    """Of `calls`, each that checkpoints a function known from the source: a `def` or `lambda`
    written there, named (undecorated), or decorated (with the checkpoint as its innermost
    decorator); for Flax's wrappers of a `Module` class (decorated or not), its `__call__`
    (unless `methods=` is given)."""
    wrappers: dict[int, tuple[ast.Call, str, Scope]] = {}
    for call, scope in calls:
        found = _wrapper(module, call, scope)
        if found is not None:
            wrappers[id(call)] = (call, found, scope)
    # What a wrapper without its function applies to (a decorator, `partial(...)(f)`): one walk.
    bare = {
        key: (call, wrapper, scope)
        for key, (call, wrapper, scope) in wrappers.items()
        if function_given(module, call, scope) is None
    }
    applied = _applied_to(module.source.tree, bare) if bare else {}
    for key, (call, wrapper, scope) in wrappers.items():
        target = _wrapped(module, call, scope, wrapper, applied.get(key))
        if target is not None:
            yield Checkpointed(call, wrapper, *target)


def static_indices(value: ast.expr) -> list[tuple[ast.expr, int]]:
    """The constant indices of `static_argnums=`: (where written, value); others are left out."""
    items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    found = []
    for item in items:
        number, sign = item, 1
        if isinstance(item, ast.UnaryOp) and isinstance(item.op, ast.USub):
            number, sign = item.operand, -1
        if isinstance(number, ast.Constant) and type(number.value) is int:
            found.append((item, sign * number.value))
    return found


def _wrapper(module: Module, call: ast.Call, scope: Scope) -> str | None:
    """The checkpoint function this call (or `functools.partial` of it) is, when it is one
    whose counting of static_argnums is known."""
    qualname = module.qualname(call.func, scope)
    if qualname in PARTIAL and call.args:
        qualname = module.qualname(call.args[0], scope)
    if qualname in CHECKPOINT_FUNCTIONS and qualname in STATIC_ARGNUMS_COUNTING:
        return qualname
    return None


def function_given(module: Module, call: ast.Call, scope: Scope) -> ast.expr | None:
    """The function passed to the wrapper in the call itself (after `partial`'s first argument)."""
    arguments = call.args[1:] if module.qualname(call.func, scope) in PARTIAL else call.args
    if arguments:
        return arguments[0]
    return next((k.value for k in call.keywords if k.arg in _FUNCTION_KEYWORDS), None)


def _wrapped(
    module: Module, call: ast.Call, scope: Scope, wrapper: str, applied: ast.AST | None
) -> tuple[CheckpointedNode, bool, Module, bool] | None:
    """The function checkpointed, whether its first parameter is counted (`self`), the module
    it is written in, and whether it is the `__call__` of the class given."""
    given: ast.AST | None = function_given(module, call, scope)
    if given is None:
        if isinstance(applied, ast.Call):  # partial(jax.checkpoint, static_argnums=...)(f)
            given = applied.args[0] if applied.args else None
        else:
            given = applied  # a decorator: the def or class below it
    node: ast.AST | None = given
    defined_in = module
    if isinstance(given, (ast.Name, ast.Attribute)):
        found = module.definition(given, scope)
        if found is None:
            return None
        defined_in, node, _ = found
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
            return None  # what the decorators make is not known
        # A class's decorators are taken to return it (`dataclass`, `jaxtyping.jaxtyped`): Flax
        # subclasses what it is given, so it must be a class, its `__call__` the one written.
    counting = STATIC_ARGNUMS_COUNTING[wrapper]
    if isinstance(node, ast.ClassDef):
        if counting.self_counted is None or any(k.arg == "methods" for k in call.keywords):
            return None
        method = next(
            (
                s
                for s in node.body
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__call__"
            ),
            None,
        )
        if method is None or method.decorator_list and not _only_compact(method):
            return None
        return method, counting.self_counted, defined_in, True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return node, counting.self_counted is not False, defined_in, False
    return None


def _only_compact(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`@nn.compact` (or `@compact`) keeps the signature of `__call__`."""
    return all(
        (decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", ""))
        == "compact"
        for decorator in method.decorator_list
    )


def _applied_to(tree: ast.Module, wrappers: dict[int, tuple[ast.Call, str, Scope]]) -> dict[int, ast.AST]:
    """For each wrapper call: the def or class it decorates as the innermost decorator, or the
    call that applies it (`partial(jax.checkpoint, ...)(f)`)."""
    applied: dict[int, ast.AST] = {}
    for node in walk_spanning(tree, [call.lineno for call, _, _ in wrappers.values()]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            innermost = node.decorator_list[-1]
            if id(innermost) in wrappers:
                applied[id(innermost)] = node
        elif isinstance(node, ast.Call) and id(node.func) in wrappers:
            applied[id(node.func)] = node
    return applied
