"""## What it does
Finds remat policies with a path that returns `None`: a bare `return`, `return None`,
falling off the end of the body, a lambda whose body is `None`, or an `or`/`and` whose result
can be a `None` operand (`return x or None` when `x` is false, `x and None` when it is true).
A path where the module JAX came from is None (`if jax is None:` after `jax = _get_jax()`, a
lazy-import helper that returns None where the import fails, or after `except ImportError:
jax = None`) is not one: JAX is absent there and calls nothing; nor is a policy that a factory
returns only on such a path.
A policy held by a table of policies (JAX107 says which) is checked even where the keys used
today select another entry: selecting it later hands it to JAX.

## Why is this bad?
JAX calls the policy once per primitive while differentiating and accepts only a `bool`,
`Saveable`, `Recompute` or an `Offloadable(...)` instance. `None` raises, at the first
`jax.grad`, often minutes into a job:
`TypeError: Value returned by a remat policy should be a bool or ad_checkpoint.Recompute, ...`.
A forward pass never calls the policy, so the bug survives until then.

## Fix safety
The fix returns `False` ("recompute"), which is what JAX does for a primitive when no
policy is given at all, so it is safe: it makes no decision that the code did not make.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.values import Kind
from jax_lsp.core.findings import Finding, Span
from jax_lsp.rules.base import Example, PolicyContext, Rule


class PolicyReturnsNone(Rule):
    code = "JAX101"

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        module, source = policy.module, policy.module.source
        for anchor, value in policy.paths.values():
            if value is None:
                yield self.finding(
                    module,
                    anchor,
                    "Bare `return` gives JAX `None` as the policy's decision; return `False` (recompute) "
                    "or `True` (save)",
                    [self.safe_fix("Return `False`", self.replace(module, anchor, "return False"))],
                )
        for leaf, kind in policy.returned_values():
            if kind is Kind.NONE:
                yield self.finding(
                    module,
                    leaf,
                    "The policy returns `None`; JAX accepts only a bool, `Saveable`, `Recompute` or "
                    "`Offloadable(...)`: return `False` (recompute) or `True` (save)",
                    [self.safe_fix("Return `False`", self.replace(module, leaf, "False"))],
                )
        node = policy.node
        if policy.paths.falls_off_end and not isinstance(node, ast.Lambda):  # a lambda returns its body
            end = source.span(node.body[-1]).end
            first = source.position(node.body[0].lineno, node.body[0].col_offset)
            if first.line == source.position(node.lineno, node.col_offset).line:
                new_text = "; return False"  # `def p(prim, *a, **k): ...` on one line
            else:
                indent = source.line_text(first.line)[: first.column]
                new_text = "\n" + indent + "return False"
            yield self.finding(
                module,
                policy.anchor_span(),
                f"`{node.name}` can reach the end of its body and return `None`; JAX accepts only a bool, "
                "`Saveable`, `Recompute` or `Offloadable(...)`: end it with `return False`",
                [self.safe_fix("Append `return False`", self.replace(module, Span(end, end), new_text))],
            )

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return True
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return None or prim.name == "sin"  # `or` moves past None: the result is a bool


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    while True:
                        if prim.name == "sin":
                            return True
                        return False


                def strict(prim, *avals, **params):
                    try:
                        return prim.name == "cos"
                    finally:
                        pass


                def by_match(prim, *avals, **params):
                    match prim.name:
                        case "sin":
                            return True
                        case _:
                            return False


                def asserting(prim, *avals, **params):
                    if avals:
                        return False
                    assert False, "a primitive without operands"


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                g = jax.checkpoint(lambda x: jnp.cos(x), policy=strict)
                h = jax.checkpoint(lambda x: jnp.sin(x), policy=by_match)
                k = jax.checkpoint(lambda x: jnp.sin(x), policy=asserting)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return True


                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return True
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(5,),
        ),
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return
                    return None


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.cos(x))
                """,
            fixed="""
                import functools

                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return False
                    return False


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.cos(x))
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(9, 10),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=lambda prim, *a, **k: None)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=lambda prim, *a, **k: False)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(4,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                save_all_but_sin = lambda prim, *_, **__: None if prim.name == "sin" else True
                f = jax.remat(lambda x: jnp.sin(jnp.cos(x)), policy=save_all_but_sin)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                save_all_but_sin = lambda prim, *_, **__: False if prim.name == "sin" else True
                f = jax.remat(lambda x: jnp.sin(jnp.cos(x)), policy=save_all_but_sin)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(4,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                class Policies:
                    skip_sin = lambda prim, *_, **__: None if prim.name == "sin" else False


                POLICIES = {"skip_sin": Policies.skip_sin}
                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=POLICIES["skip_sin"])
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                class Policies:
                    skip_sin = lambda prim, *_, **__: False if prim.name == "sin" else False


                POLICIES = {"skip_sin": Policies.skip_sin}
                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=POLICIES["skip_sin"])
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(6,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin" or None


                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin" or False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(6,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                NAMES = ("sin",)
                f = jax.checkpoint(
                    lambda x: jnp.sin(jnp.cos(x)),
                    policy=lambda prim, *_, **__: prim.name in NAMES and None,
                )
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                NAMES = ("sin",)
                f = jax.checkpoint(
                    lambda x: jnp.sin(jnp.cos(x)),
                    policy=lambda prim, *_, **__: prim.name in NAMES and False,
                )
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(7,),
        ),
    ]
