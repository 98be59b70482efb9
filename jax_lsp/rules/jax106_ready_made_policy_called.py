"""## What it does
Finds a ready-made policy of `jax.checkpoint_policies` (`dots_saveable`, `everything_saveable`,
`nothing_saveable`, `dots_with_no_batch_dims_saveable`, `checkpoint_dots`...) called with no
arguments, wherever it is: at a policy site, in a default argument, in an assignment.

## Why is this bad?
A ready-made policy *is* the policy: JAX calls it once per primitive as
`policy(prim, *avals, **params)`. Calling it yourself with no arguments never makes sense:
`dots_saveable()` raises `TypeError: ... missing 1 required positional argument: 'prim'` at
once, and `everything_saveable()` returns `True`, which JAX then tries to call at the first
`jax.grad` (`TypeError: 'bool' object is not callable`). `nothing_saveable()` returns `False`,
which JAX reads as "no policy", so it works only by accident (a warning).

## Fix safety
The fix drops the call and passes the policy itself. It is safe: it makes the code do what it
says, and for `nothing_saveable` the behaviour is the same (save nothing).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.findings import Finding, Severity
from jax_lsp.core.jax_api import READY_MADE_POLICIES, policy_member
from jax_lsp.rules.base import Example, ModuleContext, Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_RAISES = "raises `TypeError` at once (it needs the primitive JAX passes)"


def _policy_reaching_jax_is_false(namespace: dict[str, Any]) -> None:
    """JAX receives the bool `False`, not a policy: it saves nothing only by accident."""
    import jax
    import jax.numpy as jnp

    jaxpr = jax.make_jaxpr(namespace["f"])(jnp.ones((4, 4)))
    policies = [eqn.params["policy"] for eqn in jaxpr.jaxpr.eqns if eqn.primitive.name == "remat2"]
    assert policies == [False], policies


class ReadyMadePolicyCalled(Rule):
    code = "JAX106"

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        for call, scope in module.calls:
            if call.args or call.keywords or not isinstance(call.func, (ast.Name, ast.Attribute)):
                continue
            if not module.source.could_hold_site(call):  # no ready-made name, nor an alias of one
                continue
            member = policy_member(module.qualname(call.func, scope))
            if member not in READY_MADE_POLICIES:
                continue
            spelled = module.source.segment(call.func)
            yield self.finding(
                module,
                call,
                f"`{member}` is a ready-made policy: `{spelled}()` {READY_MADE_POLICIES[member].called or _RAISES}; "
                f"pass `{spelled}` without calling it",
                [self.safe_fix(f"Pass `{spelled}` uncalled", self.replace(module, call, spelled))],
                severity=Severity.WARNING if member == "nothing_saveable" else None,
            )

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.dots_saveable)
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax import checkpoint_policies as cp


                def policy(prim, *avals, **params):
                    # Delegating to a ready-made policy, with the arguments JAX passed.
                    return prim.name == "sin" or cp.dots_saveable(prim, *avals, **params)


                def block(x, policy=cp.nothing_saveable):
                    return jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), policy=policy)(x)


                def f(x):
                    return jax.checkpoint(block, policy=policy)(x)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.dots_saveable())
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=jax.checkpoint_policies.dots_saveable)
                """,
            error="missing 1 required positional argument: 'prim'",
            lines=(4,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax import checkpoint_policies as cp


                def block(x, policy=cp.checkpoint_dots()):
                    return jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), policy=policy)(x)


                def f(x):
                    return block(x)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax import checkpoint_policies as cp


                def block(x, policy=cp.checkpoint_dots):
                    return jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), policy=policy)(x)


                def f(x):
                    return block(x)
                """,
            error="missing 1 required positional argument: 'prim'",
            lines=(6,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                SAVE_ALL = jax.checkpoint_policies.everything_saveable()
                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=SAVE_ALL)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                SAVE_ALL = jax.checkpoint_policies.everything_saveable
                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=SAVE_ALL)
                """,
            error="'bool' object is not callable",
            lines=(4,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_policies

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=checkpoint_policies.nothing_saveable())
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_policies

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=checkpoint_policies.nothing_saveable)
                """,
            misbehaves=_policy_reaching_jax_is_false,
            lines=(5,),
        ),
    ]
