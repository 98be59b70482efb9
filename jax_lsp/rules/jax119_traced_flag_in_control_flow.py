"""## What it does
Finds a parameter of a checkpointed function that JAX traces, yet decides Python control flow
in its body: the test of an `if`, `while`, conditional expression, `assert` or comprehension
`if`, an operand of `not`, of `and`/`or` (a test, or any but the last operand elsewhere), or
the argument of `bool()`. The checkpoints are `jax.checkpoint`/`jax.remat` (also through
`functools.partial`, as a decorator), `flax.nnx.remat`, `flax.linen.remat`/`checkpoint` and
`flax.linen.partitioning.remat` of a `Module` class (its `__call__`). A parameter is static
when `static_argnums` names it, as each wrapper counts: `flax.linen.remat` counts `self` as
argument 0, `flax.linen.partitioning.remat` does not. The finding is on `static_argnums`, or on
the checkpoint call when it has none, and names the index that would make the parameter static.

A parameter handed to `nn.Dropout` as `deterministic` (to the layer or its call) counts as
tested: Dropout asks `if rate == 0.0 or deterministic` (a literal rate of 0 is left alone).
Otherwise only what the checkpointed function's own body tests is looked at, not the functions
it defines or calls (a flag handed on to a submodule is not followed): a parameter
it assigns again, one tested only as `x is None` (which asks nothing of a traced value), or one
used through `jnp.where`/`lax.cond` is not reported. The rule cannot tell a flag from a
container argument (a dict's truth is its length, not a traced value): any parameter tested is
taken for a value JAX traces. A parameter named in `static_argnames` counts as
static (JAX honours it under `jax_remat3`; the default checkpoint of jax 0.10 ignores it), and
`static_argnums` that are not all written as numbers, or count from the end, are left alone.
`equinox.filter_checkpoint` has no `static_argnums`: it keeps every argument that is not an
array (a Python `bool` included) out of the trace, so it is not checked. The function must be
known from the source, as for JAX117; a bare `@jax.checkpoint` decorator is not checked.

## Why is this bad?
The checkpoint traces every argument it is not told is static: a Python `True` passed to it
becomes a traced boolean, and `if deterministic:` asks Python for its truth value, which JAX
cannot give: `TracerBoolConversionError` when the checkpointed function is first called. It
typically appears after a parameter was inserted before the flag: `nn.remat(Block,
static_argnums=(5,))` then names the parameter before it, and the flag is traced.

## Fix safety
Adds the parameter's index to `static_argnums` (or `static_argnums=(i,)` to the call), as the
wrapper counts it; a keyword-only parameter has no index and gets no fix. Unsafe: a caller that
passes the parameter by keyword then gets JAX's `ValueError` about `static_argnums`, and a
static argument must be hashable.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, string_constant
from jax_lsp.core.findings import Edit, Finding, Position, Span
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTION_NAMES, FLAG_TESTING_LAYERS, FlagTestingLayer
from jax_lsp.core.policies.checkpointed import (
    STATIC_ARGNUMS,
    Checkpointed,
    CheckpointedNode,
    checkpointed,
    static_indices,
)
from jax_lsp.rules.base import Example, ModuleContext, Rule

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# The nodes that can ask for a truth value (`_truth_tests`, a layer's call).
_ASKING = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension, ast.UnaryOp, ast.BoolOp, ast.Call)
# `concrete=` changes what the wrapper traces (older JAX), or raises (newer): not checked.
_UNKNOWN = ("concrete",)


class TracedFlagInControlFlow(Rule):
    code = "JAX119"
    traceable = False  # the mistake is in the checkpointed function, which a policy's trace does not run

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        text = module.source.text
        if "checkpoint" not in text and "remat" not in text:
            return
        calls = [(call, scope) for call, scope in module.calls if _named_like_checkpoint(call)]
        for wrapped in checkpointed(module, calls):
            yield from self._check(module, wrapped)

    def _check(self, module: Module, wrapped: Checkpointed) -> Iterator[Finding]:
        if any(wrapped.keyword(name) is not None for name in _UNKNOWN):
            return
        made_static = _static(wrapped)
        if made_static is None:
            return
        indices, names = made_static
        function = wrapped.function
        positional = wrapped.positional()
        counted = {a.arg: i for i, a in enumerate(positional)}
        candidates = [
            a.arg
            for a in [*positional, *function.args.kwonlyargs]
            if counted.get(a.arg) not in indices and a.arg not in names
        ]
        if positional and wrapped.counts_first and positional[0].arg in ("self", "cls"):
            candidates = [c for c in candidates if c != positional[0].arg]
        if not candidates:
            return
        tested = _tested_parameters(wrapped, set(candidates))
        if not tested:
            return
        keyword = wrapped.keyword(STATIC_ARGNUMS)
        anchor = keyword.value if keyword is not None else _wrapper_expr(wrapped.call)
        uses = "; ".join(
            f"`{name}` {asked_by} on line {use.lineno}" for name, (asked_by, use) in tested.items()
        )
        them = "it" if len(tested) == 1 else "them"
        static = (
            f"`static_argnums={module.source.segment(keyword.value)}` does not name {them}"
            if keyword is not None
            else "no `static_argnums`"
        )
        hows = [
            f"index {counted[name]} makes `{name}` static"
            if name in counted
            else f"`{name}` is keyword-only: no index makes it static"
            for name in tested
        ]
        message = (
            f"{uses}, but `{wrapped.wrapper}` traces {them} ({static}): `TracerBoolConversionError` at "
            f"the first call of {_function_name(function)}; {'; '.join(hows)}"
        )
        new = [counted[name] for name in tested if name in counted]
        fixes = []
        if len(new) == len(tested):
            title = f"Make {', '.join(f'`{name}`' for name in tested)} static"
            fixes.append(self.unsafe_fix(title, self._edit(module, wrapped.call, keyword, new)))
        yield self.finding(module, anchor, message, fixes)

    def _edit(self, module: Module, call: ast.Call, keyword: ast.keyword | None, new: list[int]) -> Edit:
        """Add the indices `new` to `static_argnums`, or `static_argnums=` to the call."""
        added = ", ".join(str(i) for i in new)
        if keyword is not None:
            value = keyword.value
            items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
            written = ", ".join([*(module.source.segment(item) for item in items), added])
            return self.replace(
                module, value, f"[{written}]" if isinstance(value, ast.List) else f"({written})"
            )
        argument = f"static_argnums=({added},)" if len(new) == 1 else f"static_argnums=({added})"
        given: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
        if not given:  # `nnx.remat()`: inside its parentheses
            end = module.source.span(call).end
            inside = Position(end.line, end.column - 1)
            return self.replace(module, Span(inside, inside), argument)
        end = max(module.source.span(node).end for node in given)
        return self.replace(module, Span(end, end), f", {argument}")

    VALID = [
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp


                @functools.partial(jax.checkpoint, static_argnums=(2,))
                def layer(x, mask, train):
                    if mask is not None:
                        x = x * mask
                    if train:
                        x = x * 0.5
                    return jnp.sin(x)


                def block(x, use_bias):
                    y = jnp.sin(x)
                    return jnp.where(use_bias, y + 1.0, y)


                def f(x):
                    return layer(x, None, True) + jax.checkpoint(block)(x, True)
                """
        ),
        Example(
            """
                import equinox as eqx
                import jax.numpy as jnp


                @eqx.filter_checkpoint
                def layer(x, train):
                    if train:
                        x = x * 0.5
                    return jnp.sin(x)


                def f(x):
                    return layer(x, True)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp


                @functools.partial(jax.checkpoint, static_argnums=(1,))
                def layer(x, scale, train):
                    if train:
                        x = x * 0.5
                    return jnp.sin(x) * scale


                def f(x):
                    return layer(x, 2.0, True)
                """,
            fixed="""
                import functools

                import jax
                import jax.numpy as jnp


                @functools.partial(jax.checkpoint, static_argnums=(1, 2))
                def layer(x, scale, train):
                    if train:
                        x = x * 0.5
                    return jnp.sin(x) * scale


                def f(x):
                    return layer(x, 2.0, True)
                """,
            error="TracerBoolConversionError",
            lines=(7,),
        ),
        Example(
            """
                import flax.linen as nn
                import jax


                class Block(nn.Module):
                    @nn.compact
                    def __call__(self, x, mask, bias, scale, deterministic):
                        x = nn.Dense(4)(x * mask + bias) * scale
                        if not deterministic:
                            x = x * 0.5
                        return x


                RematBlock = nn.remat(Block, static_argnums=(4,))


                def f(x):
                    model = RematBlock()
                    params = model.init(jax.random.key(0), x, x, x, 2.0, True)
                    return model.apply(params, x, x, x, 2.0, True)
                """,
            fixed="""
                import flax.linen as nn
                import jax


                class Block(nn.Module):
                    @nn.compact
                    def __call__(self, x, mask, bias, scale, deterministic):
                        x = nn.Dense(4)(x * mask + bias) * scale
                        if not deterministic:
                            x = x * 0.5
                        return x


                RematBlock = nn.remat(Block, static_argnums=(4, 5))


                def f(x):
                    model = RematBlock()
                    params = model.init(jax.random.key(0), x, x, x, 2.0, True)
                    return model.apply(params, x, x, x, 2.0, True)
                """,
            error="TracerBoolConversionError",
            lines=(14,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                def block(x, use_bias):
                    y = jnp.sin(x)
                    return y + 1.0 if use_bias else y


                def f(x):
                    return jax.checkpoint(block)(x, True)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                def block(x, use_bias):
                    y = jnp.sin(x)
                    return y + 1.0 if use_bias else y


                def f(x):
                    return jax.checkpoint(block, static_argnums=(1,))(x, True)
                """,
            error="TracerBoolConversionError",
            lines=(11,),
        ),
    ]


def _named_like_checkpoint(call: ast.Call) -> bool:
    """A cheap filter before names are resolved: a call of something named like a checkpoint
    function, or `partial` of one."""
    func = call.func
    if isinstance(func, ast.Attribute) or isinstance(func, ast.Name):
        last = func.attr if isinstance(func, ast.Attribute) else func.id
        if last in CHECKPOINT_FUNCTION_NAMES:
            return True
        if last == "partial" and call.args:
            return _named_like_checkpoint(ast.Call(func=call.args[0], args=[], keywords=[]))
    return False


def _static(wrapped: Checkpointed) -> tuple[set[int], set[str]] | None:
    """The indices and names made static; None when they are not all known."""
    indices: set[int] = set()
    keyword = wrapped.keyword(STATIC_ARGNUMS)
    if keyword is not None:
        value = keyword.value
        items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        found = static_indices(value)
        if len(found) != len(items) or any(index < 0 for _, index in found):
            return None
        indices = {index for _, index in found}
    names: set[str] = set()
    keyword = wrapped.keyword("static_argnames")
    if keyword is not None:
        value = keyword.value
        items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        for item in items:
            name = string_constant(item)
            if name is None:
                return None
            names.add(name)
    return indices, names


def _tested_parameters(wrapped: Checkpointed, candidates: set[str]) -> dict[str, tuple[str, ast.expr]]:
    """Each candidate parameter whose truth value the function's own body asks, or hands to a
    Flax layer that asks it, with what asks it first and where; a parameter the body assigns
    again is left out."""
    function = wrapped.function
    body: list[ast.AST] = [function.body] if isinstance(function, ast.Lambda) else list(function.body)
    layers = _FlagTestingLayers(wrapped.defined_in, function, candidates)
    assigned: set[str] = set()
    asked: dict[str, tuple[str, ast.expr]] = {}
    for node in _walk_own(body):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                assigned.add(node.id)
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            assigned.update(node.names)
        if not isinstance(node, _ASKING):
            continue
        for asked_by, test in [*_truth_tests(node), *layers.asked(node)]:
            for name in _truth_operands(test):
                if name.id in candidates and (name.id not in asked or _before(name, asked[name.id][1])):
                    asked[name.id] = (asked_by, name)
    found = {name: use for name, use in asked.items() if name not in assigned}
    return dict(sorted(found.items(), key=lambda item: (item[1][1].lineno, item[1][1].col_offset)))


class _FlagTestingLayers:
    """The candidates handed as a flag to a Flax layer that tests it in Python (`nn.Dropout(rate)(x,
    deterministic=flag)`, or given to the layer itself), in one function's body. The layer's
    name is resolved only where a candidate is handed to something named like it."""

    _BY_NAME = {name.rsplit(".", 1)[1]: layer for name, layer in FLAG_TESTING_LAYERS.items()}

    def __init__(self, module: Module, function: CheckpointedNode, candidates: set[str]) -> None:
        self.module = module
        self.function = function
        self.candidates = candidates
        self._scope: Scope | None = None

    def asked(self, node: ast.AST) -> Iterator[tuple[str, ast.expr]]:
        if not isinstance(node, ast.Call):
            return
        for constructor, position in ((node.func, 1), (node, None)):  # the layer's call; the layer
            if not isinstance(constructor, ast.Call):
                continue
            func = constructor.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            layer = self._BY_NAME.get(name)
            if layer is None:
                continue
            given = _argument(node, layer.flag, None if position is None else layer.call_position)
            if (
                given is not None
                and any(n.id in self.candidates for n in _truth_operands(given))
                and not _zero(constructor, layer.skipped_by)
                and self._resolves_to_layer(func)
            ):
                yield _asked_by(name, layer), given

    def _resolves_to_layer(self, func: ast.expr) -> bool:
        if self._scope is None:
            self._scope = self.module.function_scope(self.function)
        return self.module.qualname(func, self._scope) in FLAG_TESTING_LAYERS


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


def _walk_own(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """The nodes of a function's body, not entering the functions and classes defined in it."""
    todo = [node for node in body if not isinstance(node, _NESTED)]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, _NESTED))


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


def _wrapper_expr(call: ast.Call) -> ast.expr:
    """The checkpoint function as written in the call: `jax.checkpoint` of `partial(jax.checkpoint)`."""
    func = call.func
    if call.args and (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "partial":
        return call.args[0]
    return func


def _function_name(function: CheckpointedNode) -> str:
    return "the lambda" if isinstance(function, ast.Lambda) else f"`{function.name}`"
