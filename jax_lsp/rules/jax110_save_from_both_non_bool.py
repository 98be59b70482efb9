"""## What it does
Finds policies combined with `jax.checkpoint_policies.save_from_both_policies(p1, p2)` that
return `Saveable`, `Recompute` or `Offloadable(...)`: your own, and the ones JAX's
offloading factories make (`save_and_offload_only_these_names(...)`,
`offload_dot_with_no_batch_dims(...)`), written there, bound to a name, made through
`functools.partial` or a factory function, or imported from another module.

## Why is this bad?
`save_from_both_policies` ORs two policies and accepts only plain Python bools from them.
Anything else raises `ValueError: The return value of the policies should be a boolean` at the
first `jax.grad`, although the same policy works when passed alone.

From jax 0.4.38 (the facts of each release); before it, `save_from_both_policies` reads any
decision by its truth value, and nothing is reported.

## Fix safety
No fix: `Recompute` maps to `False` and `Saveable` to `True`, but an `Offloadable` decision
cannot be expressed through this helper; write a single policy instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from jax_lsp.core.binding.values import Kind
from jax_lsp.core.findings import Finding
from jax_lsp.core.jax_api import POLICY_FACTORIES
from jax_lsp.core.policies.resolve import BuiltinPolicy
from jax_lsp.rules.base import Example, PolicyContext, Rule, SiteContext

_NOT_BOOL = {Kind.SAVEABLE, Kind.RECOMPUTE, Kind.OFFLOADABLE}


class SaveFromBothNonBool(Rule):
    code = "JAX110"

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        if not policy.in_save_from_both or policy.project.jax().save_from_both_non_bool_error is None:
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

    def check_site(self, site: SiteContext) -> Iterator[Finding]:
        for target in site.targets:
            if not (
                isinstance(target, BuiltinPolicy) and target.in_save_from_both and target.call is not None
            ):
                continue
            # Asked here, not before the loop: reading the facts (their JSON, the installed release)
            # is ~5% of checking a small project whose sites combine no policies.
            if site.project.jax().save_from_both_non_bool_error is None:
                return  # before jax 0.4.38, save_from_both_policies takes any truthy decision
            factory = POLICY_FACTORIES.get(target.member)
            returns = factory.decides_with if factory is not None else None
            if returns is None:
                continue
            yield self.finding(
                site.module,
                site.anchor(target.module, target.call),
                f"`{target.member}(...)` makes a policy that returns {returns}, but it is combined with "
                "`save_from_both_policies`, which accepts only plain bools: the first grad raises "
                f"`ValueError`; write one policy that decides both{site.chosen(target)}",
            )

    VALID = [
        Example(
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
        ),
    ]
    INVALID = [
        Example(
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
                """,
            error="The return value of the policies should be a boolean",
            lines=(9, 9),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies

                f = jax.checkpoint(
                    lambda x: jnp.sin(x) @ x,
                    policy=cp.save_from_both_policies(cp.offload_dot_with_no_batch_dims("device", "pinned_host"), cp.dots_saveable),
                )
                """,
            error="The return value of the policies should be a boolean",
            lines=(8,),
        ),
    ]
