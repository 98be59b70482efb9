"""## What it does
Finds `jax.checkpoint(policy=...)`, `jax.remat(policy=...)` and `nn.remat(policy=...)` called
without the function (or Flax module) to wrap, usually as a decorator
(`@jax.checkpoint(policy=p)`), and a policy passed positionally where it is keyword-only
(`jax.checkpoint(f, p)`). `@nnx.remat(policy=p)` and `@eqx.filter_checkpoint(policy=p)` are
not reported: those return a decorator when the function is missing.

## Why is this bad?
`jax.checkpoint` needs the function as its first argument, so `@jax.checkpoint(policy=p)`
raises `TypeError: checkpoint() missing 1 required positional argument: 'fun'` (Flax:
`'target'`) as soon as the module is imported. Its `policy` is keyword-only, so
`jax.checkpoint(f, p)` raises `TypeError: checkpoint() takes 1 positional argument but 2 were
given`.

## Fix safety
Both fixes are safe: `functools.partial(jax.checkpoint, policy=p)` is the documented decorator
form (the fix adds `import functools` when neither `functools` nor `partial` is imported), and
`policy=p` passes the same value the way JAX expects it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.findings import Edit, Finding, Position, Span
from jax_lsp.core.policies.partial import import_functools, partial_name
from jax_lsp.core.policies.sites import Site
from jax_lsp.rules.base import Example, Rule, SiteContext


def _arguments_text(module: Module, call: ast.Call) -> str:
    """The call's arguments as written, from the first to the last."""
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    spans = [module.source.span(argument) for argument in arguments]
    return module.source.segment(Span(min(span.start for span in spans), max(span.end for span in spans)))


def _argument_start(module: Module, previous: ast.expr, value: ast.expr) -> Position:
    """Where the argument `value` starts, with its own opening parentheses: `(p)` and
    `(q := p)` are spanned without them. Between two arguments there can only be brackets,
    one comma, whitespace and comments, so a `(` after the comma opens this argument."""
    start = module.source.span(previous).end
    between = module.source.segment(Span(start, module.source.span(value).start))
    seen_comma = False
    for number, line in enumerate(between.split("\n")):
        code = line.split("#", 1)[0]
        for column, char in enumerate(code):
            if char == ",":
                seen_comma = True
            elif char == "(" and seen_comma:
                return Position(start.line + number, column + (start.column if number == 0 else 0))
    return module.source.span(value).start


class CheckpointWithoutFunction(Rule):
    code = "JAX109"

    def check_site(self, site: SiteContext) -> Iterator[Finding]:
        if site.site.missing_function:
            yield self._missing_function(site.site)
        elif (
            site.site.positional_policy
            and site.site.value is not None
            and not any(isinstance(a, ast.Starred) for a in site.site.call.args)
        ):
            yield self._positional(site.site, site.site.value)

    def _missing_function(self, site: Site) -> Finding:
        module, call = site.module, site.call
        func = module.source.segment(call.func)
        edits = []
        partial = partial_name(module, site.scope)
        if partial is None:
            partial = "functools.partial"
            edits.append(import_functools(module))
        new_text = f"{partial}({func}, {_arguments_text(module, call)})"
        edits.append(self.replace(module, call, new_text))
        return self.finding(
            module,
            call,
            f"`{func}(...)` is called without the function to wrap and raises `TypeError` "
            f"(missing the required first argument); as a decorator use `@{new_text}`",
            [self.safe_fix(f"Use `{partial}({func}, ...)`", *edits)],
        )

    def _positional(self, site: Site, value: ast.expr) -> Finding:
        module = site.module
        spelled = module.source.segment(value)
        fixes = []
        if len(site.call.args) == 2:
            start = _argument_start(module, site.call.args[0], value)
            fixes.append(
                self.safe_fix(f"Pass `policy={spelled}`", Edit(module.path, Span(start, start), "policy="))
            )
        return self.finding(
            module,
            site.call,
            f"`policy` is keyword-only here: passed positionally it raises `TypeError` (too many "
            f"positional arguments); pass `policy={spelled}`",
            fixes,
        )

    VALID = [
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin"


                @functools.partial(jax.checkpoint, policy=policy)
                def g(x):
                    return jnp.sin(jnp.sin(x))


                f = jax.remat(g, policy=policy)
                """
        ),
        Example(
            """
                import equinox as eqx
                import jax
                import jax.numpy as jnp
                from flax import nnx


                def policy(prim, *avals, **params):
                    return prim.name == "sin"


                @nnx.remat(policy=policy)
                def g(x):
                    return jnp.sin(jnp.sin(x))


                @eqx.filter_checkpoint(policy=jax.checkpoint_policies.dots_saveable)
                def f(x):
                    return g(x) * 2
                """
        ),
    ]
    INVALID = [
        Example(
            '''
                """A block that saves only what the sine produces."""

                from __future__ import annotations

                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin"


                @jax.checkpoint(policy=policy)
                def f(x):
                    return jnp.sin(jnp.sin(x))
                ''',
            fixed='''
                """A block that saves only what the sine produces."""

                from __future__ import annotations

                import functools
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin"


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.sin(x))
                ''',
            error="missing 1 required positional argument: 'fun'",
            lines=(13,),
        ),
        Example(
            """
                from functools import partial

                import flax.linen as nn
                import jax
                import jax.numpy as jnp


                @nn.remat(policy=jax.checkpoint_policies.dots_saveable, prevent_cse=False)
                class Block(nn.Module):
                    @nn.compact
                    def __call__(self, x):
                        return jnp.sin(jnp.sin(x))


                def f(x):
                    return Block().apply({}, x)
                """,
            fixed="""
                from functools import partial

                import flax.linen as nn
                import jax
                import jax.numpy as jnp


                @partial(nn.remat, policy=jax.checkpoint_policies.dots_saveable, prevent_cse=False)
                class Block(nn.Module):
                    @nn.compact
                    def __call__(self, x):
                        return jnp.sin(jnp.sin(x))


                def f(x):
                    return Block().apply({}, x)
                """,
            error="missing 1 required positional argument: 'target'",
            lines=(8,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax import checkpoint_policies as cp


                def g(x):
                    return jnp.sin(jnp.sin(x))


                f = jax.checkpoint(g, cp.dots_saveable)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax import checkpoint_policies as cp


                def g(x):
                    return jnp.sin(jnp.sin(x))


                f = jax.checkpoint(g, policy=cp.dots_saveable)
                """,
            error="takes 1 positional argument but 2 were given",
            lines=(10,),
        ),
    ]
