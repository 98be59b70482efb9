"""## What it does
Finds remat policies that return the class `Offloadable` itself instead of an instance
`Offloadable(src=..., dst=...)`, under any alias or attribute path
(`jax.ad_checkpoint.Offloadable`, `pe.Offloadable`).

## Why is this bad?
JAX accepts an *instance* of `Offloadable`, which says where the residual goes. The class
raises `TypeError: Value returned by a remat policy should be a bool or ...` at the first
`jax.grad`. JAX's own hint for this case ("Did you return `Offloadable` instead of an
instantiated `Offloadable(...)`?") is never printed in JAX 0.10: it sits behind a check that
already excluded it.

## Fix safety
The fix builds `Offloadable(src="device", dst="pinned_host")`, the one pair that moves a
residual to host memory. It is unsafe: it moves data to host memory, which costs transfers,
and the memory kinds are a guess at the intent.
"""

from __future__ import annotations

from collections.abc import Iterator

from jax_lsp.core.binding.values import Kind
from jax_lsp.core.findings import Finding
from jax_lsp.rules.base import Example, PolicyContext, Rule


class PolicyReturnsOffloadableClass(Rule):
    code = "JAX102"

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        module = policy.module
        for leaf, kind in policy.returned_values():
            if kind is Kind.OFFLOADABLE_CLASS:
                spelled = module.source.segment(leaf)
                new_text = f'{spelled}(src="device", dst="pinned_host")'
                yield self.finding(
                    module,
                    leaf,
                    f"`{spelled}` is the class, not an instance; return `{new_text}` to offload "
                    "the residual to host memory",
                    [self.unsafe_fix(f"Return `{new_text}`", self.replace(module, leaf, new_text))],
                )

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return Offloadable(src="device", dst="pinned_host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return Offloadable
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return Offloadable(src="device", dst="pinned_host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(8,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax._src.interpreters import partial_eval as pe

                f = jax.checkpoint(
                    lambda x: jnp.sin(jnp.sin(x)),
                    policy=lambda prim, *a, **k: pe.Offloadable if prim.name == "sin" else False,
                )
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax._src.interpreters import partial_eval as pe

                f = jax.checkpoint(
                    lambda x: jnp.sin(jnp.sin(x)),
                    policy=lambda prim, *a, **k: pe.Offloadable(src="device", dst="pinned_host") if prim.name == "sin" else False,
                )
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(7,),
        ),
    ]
