"""## What it does
Finds `jax.checkpoint_policies.save_anything_except_these_names(...)` where the JAX installed for
the project ignores its names: from jax 0.10.2 (the facts of each release) it is
`lambda *_, **__: True`, the same as `everything_saveable`. Older releases refuse the tags
themselves (and nothing is reported there), though a tagged value is still saved as the output of
the operation that computed it, which the policy saves like every other.

## Why is this bad?
The values the names tag are the ones the policy was written to recompute, usually the largest
(attention scores, MLP activations). They are saved with everything else: the memory the policy
was meant to free is spent, without a message.

## Fix safety
No fix: no ready-made policy saves every value but some named ones in these releases.
`save_any_names_but_these(...)` saves only *named* values (all but the given ones), and a policy
of your own can test `prim is jax.ad_checkpoint.name_p`-tagged names where the release exports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jax_lsp.core.findings import Finding
from jax_lsp.core.jax_api import policy_member
from jax_lsp.rules.base import Example, ModuleContext, Rule, saved_residuals_of_f

_MEMBER = "save_anything_except_these_names"


def _big_is_saved(namespace: dict[str, Any]) -> None:
    """The value named 'big', which the policy names to exclude, is saved."""
    printed = saved_residuals_of_f(namespace)
    assert "named 'big'" in printed, printed


class ExcludedNamesStillSaved(Rule):
    code = "JAX114"
    traceable = False  # the trace's probe saves everything under this policy: nothing to confirm

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        if _MEMBER not in module.source.text:
            return  # every spelling of it comes from a line that names it
        facts = None
        for call, scope in module.calls:
            if policy_member(module.qualname(call.func, scope)) != _MEMBER:
                continue
            facts = facts or context.project.jax()
            if not facts.save_anything_except_these_names_saves_everything:
                return
            names = ", ".join(module.source.segment(argument) for argument in call.args) or "no names"
            yield self.finding(
                module,
                call,
                f"In jax {facts.version}, `{_MEMBER}` ignores its names and saves everything, {names} "
                "included (it is `everything_saveable`); to save only some named values use "
                "`save_only_these_names(...)`, or write a policy that excludes the names",
            )

    VALID = [
        Example(
            """
            import jax
            import jax.numpy as jnp
            from jax.ad_checkpoint import checkpoint_name

            cp = jax.checkpoint_policies


            def block(x):
                big = checkpoint_name(jnp.sin(x), "big")
                return big * big


            f = jax.checkpoint(block, policy=cp.save_any_names_but_these("big"))
            """
        ),
    ]

    INVALID = [
        Example(
            """
            import jax
            import jax.numpy as jnp
            from jax.ad_checkpoint import checkpoint_name

            cp = jax.checkpoint_policies


            def block(x):
                big = checkpoint_name(jnp.sin(x), "big")
                return big * big


            f = jax.checkpoint(block, policy=cp.save_anything_except_these_names("big"))
            """,
            misbehaves=_big_is_saved,
            lines=(13,),
        ),
    ]
