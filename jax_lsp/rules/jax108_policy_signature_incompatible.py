"""## What it does
Finds remat policies whose signature cannot take `(prim, *avals, **params)`: no parameter
for the primitive, no `*args` for the operands' abstract values, no `**kwargs` for the
primitive's parameters, or a keyword-only parameter without a default.

## Why is this bad?
JAX calls the policy once per primitive as `policy(prim, *avals, **params)`, with as many
avals as the primitive has operands and its parameters as keywords (`sin` gets
`accuracy=`). `def policy(prim)` or `def policy(prim, *avals)` raise `TypeError` at the first
`jax.grad`.

## Fix safety
The fix adds the missing `*avals` and/or `**params`, which the body does not use yet; it is
safe.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.findings import Finding, Located, Span
from jax_lsp.rules.base import Example, PolicyContext, Rule


def _end_of(module: Module, node: Located) -> Span:
    end = module.source.span(node).end
    return Span(end, end)


class PolicySignatureIncompatible(Rule):
    code = "JAX108"

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        module = policy.module
        args = policy.node.args
        positional = [*args.posonlyargs, *args.args]
        free = positional[policy.function.bound_positional :]
        bound = policy.function.bound_keywords
        problems, edits = [], []
        if not free and args.vararg is None:
            problems.append("no parameter receives the primitive")
        required_kwonly = [
            a.arg
            for a, default in zip(args.kwonlyargs, args.kw_defaults)
            if default is None and a.arg not in bound
        ]
        if required_kwonly:
            problems.append(f"keyword-only parameter `{required_kwonly[0]}` has no default")
        names = {a.arg for a in [*positional, *args.kwonlyargs]}
        if args.vararg is None:
            problems.append("no `*avals` for the operands")
            if positional and not args.kwonlyargs:
                name = "avals" if "avals" not in names else "_avals"
                last = args.defaults[-1] if args.defaults else positional[-1]
                edits.append(self.replace(module, _end_of(module, last), f", *{name}"))
        if args.kwarg is None:
            problems.append("no `**params` for the primitive's parameters")
            name = "params" if "params" not in names else "_params"
            last_parameter = self._last_parameter(args)
            if last_parameter is not None:
                edits.append(self.replace(module, _end_of(module, last_parameter), f", **{name}"))
        if not problems:
            return
        fixes = []
        if edits and not required_kwonly and (free or args.vararg is not None):
            title = "Add " + " and ".join(f"`{e.new_text[2:]}`" for e in edits)
            fixes.append(self.safe_fix(title, *edits))
        label = "lambda" if isinstance(policy.node, ast.Lambda) else f"`{policy.node.name}`"
        yield self.finding(
            module,
            policy.anchor_span(),
            f"JAX calls a policy as `policy(prim, *avals, **params)`, but {label} cannot take that: "
            + "; ".join(problems),
            fixes,
        )

    @staticmethod
    def _last_parameter(args: ast.arguments) -> ast.expr | ast.arg | None:
        if args.kwonlyargs:
            default = args.kw_defaults[-1]
            return default if default is not None else args.kwonlyargs[-1]
        if args.vararg is not None:
            return args.vararg
        if args.defaults:
            return args.defaults[-1]
        positional = [*args.posonlyargs, *args.args]
        return positional[-1] if positional else None

    VALID = [
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp


                def by_name(names, prim, *avals, **params):
                    return prim.name in names


                f = jax.checkpoint(
                    lambda x: jnp.sin(jnp.cos(x)), policy=functools.partial(by_name, ("sin",))
                )
                g = jax.checkpoint(lambda x: jnp.sin(x), policy=lambda *args, **kwargs: False)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim):
                    return prim.name == "sin"


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin"


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            error="got an unexpected keyword argument",
            lines=(5,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                save_sin = lambda prim: prim.name == "sin"
                f = jax.remat(lambda x: jnp.sin(jnp.sin(x)), policy=save_sin)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                save_sin = lambda prim, *avals, **params: prim.name == "sin"
                f = jax.remat(lambda x: jnp.sin(jnp.sin(x)), policy=save_sin)
                """,
            error="got an unexpected keyword argument",
            lines=(4,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=lambda prim, *avals: False)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=lambda prim, *avals, **params: False)
                """,
            error="got an unexpected keyword argument",
            lines=(4,),
        ),
    ]
