"""## What it does
Finds `static_argnums` of `jax.checkpoint`/`jax.remat` (also through `functools.partial`, as a
decorator), `flax.nnx.remat`, `flax.linen.remat` and `flax.linen.partitioning.remat` that point
past the positional parameters of the function they checkpoint, or at its keyword-only
parameters. Negative indices count from the end, as JAX counts them.

Only a function known from the source is checked: a `def` or `lambda` written there, named, or
decorated (with the checkpoint as its innermost decorator), without `*args`. For Flax's
wrappers of a `Module` class, the function is its `__call__` (unless `methods=` is given);
`flax.linen.remat` counts `self` as argument 0, `flax.linen.partitioning.remat` does not.

## Why is this bad?
JAX checks `static_argnums` against the positional arguments of each call:
`ValueError: the static_argnums argument to jax.checkpoint / jax.remat can only take integer
values greater than or equal to -len(args) and less than len(args)`, raised when the
checkpointed function is first called. An index past every positional parameter can never be
right, and a keyword-only parameter can never be passed positionally: it can be static only
by name (`static_argnames`, or a `functools.partial` that binds it). Through
`flax.linen.remat` the numbers in JAX's message are shifted by Flax's own arguments, which
makes the mistake hard to see. `flax.linen.partitioning.remat` raises nothing: an index past
the end silently makes nothing static, and the argument meant to be static is traced.

## Fix safety
No fix: which argument was meant (off by one, `self` counted or not, a keyword-only one) only
the author knows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, walk_spanning
from jax_lsp.core.findings import Finding, Severity
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTIONS, PARTIAL, STATIC_ARGNUMS_COUNTING
from jax_lsp.rules.base import Example, ModuleContext, Rule

_FUNCTION_KEYWORDS = ("fun", "f", "target")
_KEYWORD = "static_argnums"


def _indices(value: ast.expr) -> list[tuple[ast.expr, int]]:
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


class StaticArgnumsOutOfRange(Rule):
    code = "JAX117"
    traceable = False  # the mistake is in how the user's function is wrapped, not in the policy

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        if _KEYWORD not in module.source.text:
            return
        wrappers: dict[int, tuple[ast.Call, str, Scope]] = {}
        for call, scope in module.calls:
            if not any(k.arg == _KEYWORD for k in call.keywords):
                continue
            found = self._wrapper(module, call, scope)
            if found is not None:
                wrappers[id(call)] = (call, found, scope)
        if not wrappers:
            return
        applied = _applied_to(module.source.tree, wrappers)
        for key, (call, wrapper, scope) in wrappers.items():
            target = self._wrapped(module, call, scope, wrapper, applied.get(key))
            if target is None:
                continue
            function, counts_first = target
            value = next(k.value for k in call.keywords if k.arg == _KEYWORD)
            yield from self._check(module, value, function, wrapper, counts_first)

    def _wrapper(self, module: Module, call: ast.Call, scope: Scope) -> str | None:
        """The checkpoint function this call (or `functools.partial` of it) is, when it is one
        whose counting of static_argnums is known."""
        qualname = module.qualname(call.func, scope)
        if qualname in PARTIAL and call.args:
            qualname = module.qualname(call.args[0], scope)
        if qualname in CHECKPOINT_FUNCTIONS and qualname in STATIC_ARGNUMS_COUNTING:
            return qualname
        return None

    def _wrapped(
        self,
        module: Module,
        call: ast.Call,
        scope: Scope,
        wrapper: str,
        applied: ast.AST | None,
    ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, bool] | None:
        """The function checkpointed, and whether its first parameter is counted (`self`)."""
        arguments = call.args[1:] if module.qualname(call.func, scope) in PARTIAL else call.args
        given: ast.AST | None = arguments[0] if arguments else None
        given = given or next((k.value for k in call.keywords if k.arg in _FUNCTION_KEYWORDS), None)
        if given is None:
            if isinstance(applied, ast.Call):  # partial(jax.checkpoint, static_argnums=...)(f)
                given = applied.args[0] if applied.args else None
            else:
                given = applied  # a decorator: the def or class below it
        node: ast.AST | None = given
        if isinstance(given, (ast.Name, ast.Attribute)):
            found = module.definition(given, scope)
            node = found[1] if found is not None else None
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.decorator_list
            ):
                return None  # what the decorators make is not known
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
            return method, counting.self_counted
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node, counting.self_counted is not False
        return None

    def _check(
        self,
        module: Module,
        value: ast.expr,
        function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        wrapper: str,
        counts_first: bool,
    ) -> Iterator[Finding]:
        args = function.args
        if args.vararg is not None:
            return
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        if not counts_first:
            positional = positional[1:]
        counting = STATIC_ARGNUMS_COUNTING[wrapper]
        name = "the lambda" if isinstance(function, ast.Lambda) else f"`{function.name}`"
        takes = ", ".join(f"`{p}`" for p in positional) or "none"
        if counting.self_counted is False:
            takes += ", not counting `self`"
        keyword_only = ", ".join(f"`{a.arg}`" for a in args.kwonlyargs)
        severity = None if counting.raises else Severity.WARNING
        for where, index in _indices(value):
            if -len(positional) <= index < len(positional) or (index < 0 and not counting.negative):
                continue
            written = module.source.segment(where)
            where_to = (
                "counts back past the first positional parameter"
                if index < 0
                else "is past the positional parameters"
            )
            message = f"Index {written} of `static_argnums` {where_to} of {name} ({takes}): {counting.effect}"
            if keyword_only and index >= 0:
                message += f"; keyword-only parameters ({keyword_only}) cannot be static by index"
                if wrapper.startswith("jax."):
                    message += ": name them in `static_argnames`"
            yield self.finding(module, where, message, severity=severity)

    VALID = [
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp


                @functools.partial(jax.checkpoint, static_argnums=(1,))
                def g(x, power):
                    return jnp.sin(x) ** power


                def f(x):
                    return g(x, 3) + jax.checkpoint(lambda y, n: y * n, static_argnums=-1)(x, 2)
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
                def g(x, *, power=2):
                    return jnp.sin(x) ** power


                def f(x):
                    return g(x, power=3)
                """,
            error="the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can only take integer values",
            lines=(7,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                def scaled(x, n):
                    return jnp.sin(x) * n


                g = jax.remat(scaled, static_argnums=(0, 2))


                def f(x):
                    return g(x, 2)
                """,
            error="can only take integer values greater than or equal to `-len(args)`",
            lines=(9,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                g = jax.checkpoint(lambda x, n: jnp.sin(x) * n, static_argnums=-3)


                def f(x):
                    return g(x, 2)
                """,
            error="greater than or equal to",
            lines=(4,),
        ),
    ]


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
