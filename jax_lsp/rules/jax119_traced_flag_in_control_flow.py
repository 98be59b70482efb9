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
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import string_constant
from jax_lsp.core.findings import Edit, Finding, Position, Span
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTION_NAMES
from jax_lsp.core.policies.checkpointed import (
    STATIC_ARGNUMS,
    Checkpointed,
    CheckpointedNode,
    checkpointed,
    static_indices,
)
from jax_lsp.core.policies.checkpointed_calls import defaulted, passed_parameters
from jax_lsp.core.policies.flag_tests import tested_parameters
from jax_lsp.rules.base import Example, ModuleContext, Rule

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
        tested = tested_parameters(wrapped.defined_in, wrapped.function, set(candidates))
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


def _jitted(module: Module, name: str, jit: ast.Call, index: int | None) -> str:
    """What a lifted `jit` that traces the parameter `name` on its way needs as well."""
    where = f"`{module.source.segment(jit.func)}` on line {jit.lineno} traces `{name}` too"
    if index is None:
        return f"{where}: its `static_argnames` must name it as well"
    return f"{where}: its `static_argnums` must name index {index} as well"


def _wrapper_expr(call: ast.Call) -> ast.expr:
    """The checkpoint function as written in the call: `jax.checkpoint` of `partial(jax.checkpoint)`."""
    func = call.func
    if call.args and (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "partial":
        return call.args[0]
    return func


def _function_name(function: CheckpointedNode) -> str:
    return "the lambda" if isinstance(function, ast.Lambda) else f"`{function.name}`"
