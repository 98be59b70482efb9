"""## What it does
Finds `static_argnums` of `jax.checkpoint`/`jax.remat` (also through `functools.partial`, as a
decorator), `flax.nnx.remat`, `flax.linen.remat` and `flax.linen.partitioning.remat` that point
past the positional parameters of the function they checkpoint, or at its keyword-only
parameters. Negative indices count from the end, as JAX counts them.

Only a function known from the source is checked: a `def` or `lambda` written there, named
(undecorated), or decorated (with the checkpoint as its innermost decorator), without `*args`.
For Flax's wrappers of a `Module` class, the function is its `__call__` (unless `methods=` is
given; the class's own decorators are taken to return it); `flax.linen.remat` counts `self` as
argument 0, `flax.linen.partitioning.remat` does not.

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
from jax_lsp.core.findings import Finding, Severity
from jax_lsp.core.policies.checkpointed import STATIC_ARGNUMS, Checkpointed, checkpointed, static_indices
from jax_lsp.rules.base import Example, ModuleContext, Rule


class StaticArgnumsOutOfRange(Rule):
    code = "JAX117"
    traceable = False  # the mistake is in how the user's function is wrapped, not in the policy

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        if STATIC_ARGNUMS not in module.source.text:
            return
        calls = [
            (call, scope)
            for call, scope in module.calls
            if any(k.arg == STATIC_ARGNUMS for k in call.keywords)
        ]
        for wrapped in checkpointed(module, calls):
            keyword = wrapped.keyword(STATIC_ARGNUMS)
            if keyword is not None:
                yield from self._check(module, keyword.value, wrapped)

    def _check(self, module: Module, value: ast.expr, wrapped: Checkpointed) -> Iterator[Finding]:
        function = wrapped.function
        args = function.args
        if args.vararg is not None:
            return
        positional = [a.arg for a in wrapped.positional()]
        counting = wrapped.counting
        name = "the lambda" if isinstance(function, ast.Lambda) else f"`{function.name}`"
        takes = ", ".join(f"`{p}`" for p in positional) or "none"
        if counting.self_counted is False:
            takes += ", not counting `self`"
        keyword_only = ", ".join(f"`{a.arg}`" for a in args.kwonlyargs)
        severity = None if counting.raises else Severity.WARNING
        for where, index in static_indices(value):
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
                if wrapped.wrapper.startswith("jax."):
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
