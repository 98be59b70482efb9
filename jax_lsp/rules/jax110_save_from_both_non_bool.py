"""## What it does
Finds policies combined with `jax.checkpoint_policies.save_from_both_policies(p1, p2)` that
return `Saveable`, `Recompute` or `Offloadable(...)`.

## Why is this bad?
`save_from_both_policies` ORs two policies and accepts only plain Python bools from them.
Anything else raises `ValueError: The return value of the policies should be a boolean` at the
first `jax.grad`, although the same policy works when passed alone.

## Fix safety
No fix: `Recompute` maps to `False` and `Saveable` to `True`, but an `Offloadable` decision
cannot be expressed through this helper; write a single policy instead.
"""

from __future__ import annotations

from jax_lsp.core.model import Severity
from jax_lsp.rules.base import Example, PolicyContext, Rule, dedent_code
from jax_lsp.rules.values import Kind

_NOT_BOOL = {Kind.SAVEABLE, Kind.RECOMPUTE, Kind.OFFLOADABLE}


class SaveFromBothNonBool(Rule):
    code = "JAX110"
    name = "save-from-both-non-bool"
    severity = Severity.ERROR
    summary = "A policy combined with save_from_both_policies returns something other than a bool"

    def check_policy(self, policy: PolicyContext):
        if not policy.in_save_from_both:
            return
        for leaf, kind in policy.returned_values():
            if kind in _NOT_BOOL:
                yield self.finding(
                    policy.module,
                    leaf,
                    f"This policy is combined with `save_from_both_policies`, which accepts only "
                    f"plain bools, but returns {kind.value}: return `True`/`False`, or write one "
                    "policy that decides both",
                )

    VALID = [
        Example(
            dedent_code(
                """
                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies


                def sines(prim, *avals, **params):
                    return prim.name == "sin"


                f = jax.checkpoint(
                    lambda x: jnp.sin(x) @ x, policy=cp.save_from_both_policies(cp.dots_saveable, sines)
                )
                """
            )
        ),
    ]
    INVALID = [
        Example(
            dedent_code(
                """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Recompute, Saveable

                cp = jax.checkpoint_policies


                def sines(prim, *avals, **params):
                    return Saveable if prim.name == "sin" else Recompute


                f = jax.checkpoint(
                    lambda x: jnp.sin(x) @ x, policy=cp.save_from_both_policies(cp.dots_saveable, sines)
                )
                """
            ),
            error="The return value of the policies should be a boolean",
            lines=(9, 9),
        ),
    ]
