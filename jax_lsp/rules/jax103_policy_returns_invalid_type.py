"""## What it does
Finds remat policies that return a value of a type JAX does not accept: an `int` (`0`,
`1`), a `float`, a string, a container, a NumPy / jax.numpy value such as
`np.prod(aval.shape) > n`, `np.any(...)` or `np.bool_(...)`, or another policy
(`return jax.checkpoint_policies.nothing_saveable`, a member of `jax.checkpoint_policies` or
any function) instead of that policy's decision. JAX reached through a lazy-import helper
(`jax = _get_jax()` in a factory, the helper returning the module or None) is followed into
every branch of the factory but the one where it is None.
A policy held by a table of policies (JAX107 says which) is checked even where the keys used
today select another entry: selecting it later hands it to JAX.

## Why is this bad?
JAX accepts exactly a Python `bool`, `Saveable`, `Recompute` or an `Offloadable(...)`
instance. Anything else raises `TypeError: Value returned by a remat policy should be a bool
or ...` at the first `jax.grad`. NumPy comparisons are the usual trap: `np.prod(s) > n` is a
`numpy.bool`, not a `bool`, and JAX rejects it. A policy returned by a policy is a function
object, not a decision: JAX does not call it for you.

## Fix safety
Wrapping a NumPy value in `bool(...)` and replacing `0`/`1` with `False`/`True` keep the
decision the code meant, so both are safe. Strings, containers and other numbers have no fix:
what they were meant to say is not clear. A returned policy is called with the arguments JAX
passed (`return dots_saveable(prim, *avals, **params)`, with the policy's own parameter names),
or replaced by its constant decision (`False` for `nothing_saveable`, `True` for
`everything_saveable`): the decision the code named, so the fix is safe. There is no fix when
the policy's signature cannot pass JAX's arguments on (JAX108 reports that first).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.values import Kind
from jax_lsp.core.findings import Finding
from jax_lsp.core.jax_api import READY_MADE_POLICIES, policy_member
from jax_lsp.rules.base import Example, PolicyContext, Rule

_INVALID = {Kind.INT, Kind.FLOAT, Kind.STR, Kind.CONTAINER, Kind.NUMPY, Kind.POLICY}
# Ready-made policies whose decision does not depend on the primitive.


def _delegation(policy: PolicyContext) -> str | None:
    """`(prim, *avals, **params)` spelled with the policy's own parameters; None when its
    signature cannot pass on what JAX gives it."""
    args = policy.node.args
    positional = [*args.posonlyargs, *args.args][policy.function.bound_positional :]
    if not positional or args.vararg is None or args.kwarg is None or args.kwonlyargs:
        return None
    return ", ".join([*(a.arg for a in positional), f"*{args.vararg.arg}", f"**{args.kwarg.arg}"])


class PolicyReturnsInvalidType(Rule):
    code = "JAX103"

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        for leaf, kind in policy.returned_values():
            if kind is Kind.POLICY:
                yield self._returns_policy(policy, leaf)
            elif kind in _INVALID:
                yield self._finding(policy.module, leaf, kind)

    def _returns_policy(self, policy: PolicyContext, leaf: ast.expr) -> Finding:
        module = policy.module
        text = module.source.segment(leaf)
        named = isinstance(leaf, (ast.Name, ast.Attribute))
        member = policy_member(module.qualname(leaf, module.function_scope(policy.node))) if named else None
        arguments = _delegation(policy)
        ready_made = READY_MADE_POLICIES.get(member or "")
        fixed = ready_made.decision if ready_made is not None else None
        if fixed is None and arguments is not None and not isinstance(leaf, ast.Lambda):
            fixed = f"{text}({arguments})"
        message = (
            f"The policy returns the policy `{text}` instead of a decision; JAX does not call it for you "
            "and raises `TypeError` at the first grad"
        )
        if fixed is None:
            return self.finding(module, leaf, message + ": return its decision")
        return self.finding(
            module,
            leaf,
            f"{message}: return `{fixed}`",
            [self.safe_fix(f"Return `{fixed}`", self.replace(module, leaf, fixed))],
        )

    def _finding(self, module: Module, leaf: ast.expr, kind: Kind) -> Finding:
        text = module.source.segment(leaf)
        if kind is Kind.NUMPY:
            fixed = f"bool({text})"
            message = f"`{text}` is a NumPy value, not a Python bool; JAX rejects it: return `{fixed}`"
            return self.finding(
                module,
                leaf,
                message,
                [self.safe_fix(f"Wrap in `{fixed}`", self.replace(module, leaf, fixed))],
            )
        if kind is Kind.INT and isinstance(leaf, ast.Constant) and leaf.value in (0, 1):  # not `0 or 1`
            fixed = "True" if leaf.value else "False"
            message = f"The policy returns the int `{text}`; JAX needs a bool: return `{fixed}`"
            return self.finding(
                module,
                leaf,
                message,
                [self.safe_fix(f"Return `{fixed}`", self.replace(module, leaf, fixed))],
            )
        message = (
            f"The policy returns `{text}` ({kind.value}); JAX accepts only a bool, `Saveable`, "
            "`Recompute` or `Offloadable(...)`"
        )
        return self.finding(module, leaf, message)

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                import numpy as np


                def policy(prim, *avals, **params):
                    return bool(np.prod(avals[0].shape) > 8) if avals else False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax import lax


                def policy(prim, *avals, **params):
                    return prim is lax.sin_p or str(prim) == "cos" or jnp.size(avals[0]) > 100


                f = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                import numpy as np


                def policy(prim, *avals, **params):
                    return np.prod(avals[0].shape) > 8


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                import numpy as np


                def policy(prim, *avals, **params):
                    return bool(np.prod(avals[0].shape) > 8)


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(7,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return 1
                    return 0


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return True
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(7, 8),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=lambda prim, *a, **k: "save")
                """,
            fixed=None,
            error="Value returned by a remat policy should be a bool",
            lines=(4,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return cp.nothing_saveable
                    return cp.dots_saveable


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)) @ x, policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return False
                    return cp.dots_saveable(prim, *avals, **params)


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)) @ x, policy=policy)
                """,
            error="Value returned by a remat policy should be a bool",
            lines=(9, 10),
        ),
    ]
