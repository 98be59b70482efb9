"""## What it does
Finds a parameter of a checkpointed function that JAX traces, yet decides Python control flow
in its body: the test of an `if`, `while`, conditional expression, `assert` or comprehension
`if`, an operand of `not`, of `and`/`or` (a test, or any but the last operand elsewhere), or
the argument of `bool()`. The checkpoints are `jax.checkpoint`/`jax.remat` (also through
`functools.partial`, as a decorator), `flax.nnx.remat`, `flax.linen.remat`/`checkpoint` and
`flax.linen.partitioning.remat` of a `Module` class (its `__call__`; the class's own
decorators, such as `dataclass` or `jaxtyping.jaxtyped`, are taken to return it). A parameter
is static when `static_argnums` names it, as each wrapper counts: `flax.linen.remat` counts
`self` as argument 0, also under `nn.scan`, `nn.vmap` and `nn.jit`;
`flax.linen.partitioning.remat` does not. The finding is on `static_argnums`, or on the
checkpoint call when it has none, and names the index that would make the parameter static.

A parameter with a default is reported only where some call of the checkpointed callable in
the checkpoint's module can pass it: a call of it (by position, keyword, `*args` or
`**kwargs`), through `functools.partial` (its arguments count), a transform that forwards its
arguments (`vmap`, `jit`, `nn.scan`, `nn.vmap`...), a name or `self.` attribute it is bound
to, and for a Flax `Module` class its instances, their calls, `apply` and `init`. `lax.scan`
(two arguments), `lax.map`, `fori_loop` and `while_loop` pass only their own; a call of the
unwrapped function passes nothing to the checkpoint. Where the callers are unknown (the
callable is exported, returned or stored), a parameter with a default is taken to keep it, and
one without a default is reported.

Through Flax's `nn.scan`, `nn.vmap` and `nn.jit` of a remat'd `Module` (bound to a `setup` or
`__init__` attribute, or to a local), the arguments are counted as Flax counts them, the module
being argument 0. `nn.scan` and `nn.vmap` drop keyword arguments (with a `RuntimeWarning`):
a parameter passed to them by keyword keeps its default. An argument they slice (on an axis of
`in_axes`, which is 0 by default, or `nn.scan`'s carry) is data, traced whatever
`static_argnums` says: its parameter is not reported; `nn.broadcast` (`None` for `nn.vmap`)
hands an argument on as it is. `nn.jit` traces an argument its own `static_argnums` (counting
`self` too) or `static_argnames` does not name: the message then says that it must name it as
well.

What the checkpointed function's body asks is looked at, its lambdas included (they are
called where they are written, as a rule), not the functions it defines. A parameter handed
to `nn.Dropout` or `nnx.Dropout` as `deterministic` (to the layer, to its call, or to a layer
bound to a name and called through it, a branch of a conditional expression included) counts
as tested: Dropout asks `if rate == 0.0 or deterministic` (a literal rate of 0 is left alone).
So does a parameter handed to a function or lambda bound to a name whose own body (or callee,
three deep) tests the parameter that gets it; a flag handed to a submodule's attribute
(`self.block(x, flag)`) is not followed. A parameter the body assigns again, one tested only
as `x is None` (which asks nothing of a traced value), or one used through
`jnp.where`/`lax.cond` is not reported. The rule cannot tell a flag from a
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
import os
from collections.abc import Iterable, Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, iter_parameters, string_constant
from jax_lsp.core.findings import Edit, Finding, Position, Span
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTION_NAMES, FLAG_TESTING_LAYERS, FlagTestingLayer
from jax_lsp.core.policies.checkpointed import (
    STATIC_ARGNUMS,
    Checkpointed,
    CheckpointedNode,
    checkpointed,
    static_indices,
)
from jax_lsp.core.policies.checkpointed_calls import defaulted, passed_parameters
from jax_lsp.rules.base import Example, ModuleContext, Rule

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The nodes that can ask for a truth value (`_truth_tests`, a layer's call).
_ASKING = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension, ast.UnaryOp, ast.BoolOp, ast.Call)
# The last names of the layers that test a flag (`Dropout`), resolved only where one is called.
_LAYER_NAMES = frozenset(name.rsplit(".", 1)[1] for name in FLAG_TESTING_LAYERS)
# How deep callees bound to names are followed.
_CALLEES_FOLLOWED = 3
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
        tested = _tested_parameters(wrapped.defined_in, wrapped.function, set(candidates))
        if not tested:
            return
        passed = passed_parameters(module, wrapped)
        with_default = defaulted(wrapped)
        tested = {
            name: use
            for name, use in tested.items()
            # a parameter no call passes keeps its default; one that arrives sliced is an array
            if name in passed.as_is or name not in passed.sliced and name not in with_default
        }
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
        hows += [_jitted(module, name, *passed.jitted[name]) for name in tested if name in passed.jitted]
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
                import flax.linen as nn
                import jax


                class Block(nn.Module):
                    @nn.compact
                    def __call__(self, x, scale, deterministic=True):
                        x = nn.Dense(4)(x) * scale
                        return nn.Dropout(0.1)(x, deterministic), None


                class Model(nn.Module):
                    def setup(self):
                        block = nn.remat(Block, static_argnums=(2,))
                        self.layers = nn.scan(
                            block,
                            variable_axes={"params": 0},
                            split_rngs={"params": True},
                            in_axes=(nn.broadcast, nn.broadcast),
                            length=2,
                        )()

                    def __call__(self, x):
                        return self.layers(x, 2.0, True)[0]


                def f(x):
                    model = Model()
                    params = model.init(jax.random.key(0), x)
                    return model.apply(params, x)
                """,
            fixed="""
                import flax.linen as nn
                import jax


                class Block(nn.Module):
                    @nn.compact
                    def __call__(self, x, scale, deterministic=True):
                        x = nn.Dense(4)(x) * scale
                        return nn.Dropout(0.1)(x, deterministic), None


                class Model(nn.Module):
                    def setup(self):
                        block = nn.remat(Block, static_argnums=(2, 3))
                        self.layers = nn.scan(
                            block,
                            variable_axes={"params": 0},
                            split_rngs={"params": True},
                            in_axes=(nn.broadcast, nn.broadcast),
                            length=2,
                        )()

                    def __call__(self, x):
                        return self.layers(x, 2.0, True)[0]


                def f(x):
                    model = Model()
                    params = model.init(jax.random.key(0), x)
                    return model.apply(params, x)
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


def _tested_parameters(
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
        inner = _tested_parameters(module, function, set(flags), self.depth + 1)
        for parameter, (asked_by, use) in inner.items():
            callee = f"`{name}`" if isinstance(function, ast.Lambda) else f"`{function.name}`"
            where = "" if module is self.module else f" of {os.path.basename(module.path)}"
            yield (
                f"goes to {callee}, where `{parameter}` {asked_by} (line {use.lineno}{where})",
                flags[parameter],
            )


def _jitted(module: Module, name: str, jit: ast.Call, index: int | None) -> str:
    """What a lifted `jit` that traces the parameter `name` on its way needs as well."""
    where = f"`{module.source.segment(jit.func)}` on line {jit.lineno} traces `{name}` too"
    if index is None:
        return f"{where}: its `static_argnames` must name it as well"
    return f"{where}: its `static_argnums` must name index {index} as well"


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


def _wrapper_expr(call: ast.Call) -> ast.expr:
    """The checkpoint function as written in the call: `jax.checkpoint` of `partial(jax.checkpoint)`."""
    func = call.func
    if call.args and (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "partial":
        return call.args[0]
    return func


def _function_name(function: CheckpointedNode) -> str:
    return "the lambda" if isinstance(function, ast.Lambda) else f"`{function.name}`"
