"""## What it does
Finds a literal passed as a policy, directly or through a name: a string such as
`"dots_saveable"` (a policy's name copied from a config), `True`, a number, a non-empty list;
also as the entry of a table of policies that a key chosen at run time looks up (a dict
holding no policy at all is a config, not a table of policies, and is left alone).

## Why is this bad?
JAX calls the policy once per primitive as `policy(prim, *avals, **params)`. A literal cannot
be called: the forward pass runs, and the first `jax.grad` raises
`TypeError: 'str' object is not callable`. (A falsy literal such as `None` or `False` is read
as "no policy" and saves nothing.) To choose a policy by name, look it up:
`getattr(jax.checkpoint_policies, name)`.

## Fix safety
When the string names a ready-made policy of `jax.checkpoint_policies` and the module imports
`jax` (or `jax.checkpoint_policies` under a name), the fix passes that policy instead of its
name. It is safe: the code crashed at the first gradient, and now does what its text says.
There is no fix for other literals: only the author knows which policy `True` or `1` meant.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, string_constant
from jax_lsp.core.findings import Finding
from jax_lsp.core.jax_api import POLICY_FACTORIES, READY_MADE_POLICIES
from jax_lsp.core.policies.resolve import LiteralValue
from jax_lsp.rules.base import Example, Rule, SiteContext

_POLICIES_MODULES = {"jax.checkpoint_policies", "jax.ad_checkpoint.checkpoint_policies"}


def _failure(expr: ast.expr) -> str:
    """What the first grad raises."""
    if isinstance(expr, ast.Constant):
        return f"`TypeError: '{type(expr.value).__name__}' object is not callable`"
    return "a `TypeError`"  # a container is hashed before it is called


def _kind(expr: ast.expr) -> str:
    if isinstance(expr, ast.Constant):
        return type(expr.value).__name__
    return type(expr).__name__.lower()


def _policies_prefix(module: Module, scope: Scope) -> str | None:
    """How code in `scope` can name a member of `jax.checkpoint_policies`, if it can."""
    found = None
    for name in sorted(module.scope.bindings):
        qualname = module.qualname(ast.Name(id=name, ctx=ast.Load()), scope)
        if qualname == "jax":
            return f"{name}.checkpoint_policies."
        if qualname in _POLICIES_MODULES and found is None:
            found = f"{name}."
    return found


class PolicyNotCallable(Rule):
    code = "JAX111"

    def check_site(self, site: SiteContext) -> Iterator[Finding]:
        for target in site.targets:
            if not isinstance(target, LiteralValue):
                continue
            expr = target.expr
            name = string_constant(expr)
            kind = _kind(expr)
            where = site.anchor(target.module, expr)
            fixes = []
            if name in READY_MADE_POLICIES:
                advice = f"pass the policy itself, `jax.checkpoint_policies.{name}`"
                prefix = _policies_prefix(target.module, target.scope) if where is expr else None
                if prefix is not None:
                    fixes.append(
                        self.safe_fix(
                            f"Pass `{prefix}{name}`",
                            self.replace(target.module, expr, f"{prefix}{name}"),
                        )
                    )
            elif name in POLICY_FACTORIES:
                advice = f"call `jax.checkpoint_policies.{name}` with {POLICY_FACTORIES[name].takes}"
            else:
                advice = (
                    "pass a function or a member of `jax.checkpoint_policies` (to choose one by "
                    "name: `getattr(jax.checkpoint_policies, name)`)"
                )
            yield self.finding(
                site.module,
                where,
                f"The policy is a `{kind}`, which JAX cannot call: the first grad raises "
                f"{_failure(expr)}; {advice}{site.chosen(target)}",
                fixes,
            )

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp

                NAME = "dots_saveable"  # a policy chosen by name, e.g. in a config
                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=getattr(jax.checkpoint_policies, NAME))
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def g(x):
                    return jnp.sin(checkpoint_name(jnp.sin(x), "inner"))


                f = jax.checkpoint(g, policy=jax.checkpoint_policies.save_only_these_names("inner"))
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy="dots_saveable")
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.dots_saveable)
                """,
            error="'str' object is not callable",
            lines=(4,),
        ),
        Example(
            """
                import functools

                import jax.numpy as jnp
                from jax import checkpoint, checkpoint_policies as cp

                REMAT_POLICY = "nothing_saveable"


                @functools.partial(checkpoint, policy=REMAT_POLICY)
                def f(x):
                    return jnp.sin(jnp.sin(x))
                """,
            fixed="""
                import functools

                import jax.numpy as jnp
                from jax import checkpoint, checkpoint_policies as cp

                REMAT_POLICY = cp.nothing_saveable


                @functools.partial(checkpoint, policy=REMAT_POLICY)
                def f(x):
                    return jnp.sin(jnp.sin(x))
                """,
            error="'str' object is not callable",
            lines=(6,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=True)
                """,
            error="'bool' object is not callable",
            lines=(4,),
        ),
    ]
