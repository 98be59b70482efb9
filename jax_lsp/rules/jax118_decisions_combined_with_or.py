"""## What it does
Finds, inside a remat policy, decisions that are always true combined as if they were bools:
`p1(prim, *a, **k) or p2(prim, *a, **k)`, `p1(...) and p2(...)`, `any([p1(...), p2(...)])`,
`all([...])`, where `p1` returns `Saveable`, `Recompute` or `Offloadable(...)`. Such a `p1` is
one of your own policies that returns them, or a policy made by JAX's offloading factories
(`save_and_offload_only_these_names(...)`, `offload_dot_with_no_batch_dims(...)`), bound to a
name or called where it is made.

## Why is this bad?
`Saveable`, `Recompute` and every `Offloadable(...)` are true as Python values. `or` stops at
the first true operand and returns it: `p1(...) or p2(...)` is always `p1`'s decision, and JAX
reads a returned `Recompute` as "recompute", so `p2` never decides anything; what it would save
is recomputed, silently. `and` moves past a true operand: `p1(...) and p2(...)` is always
`p2`'s decision and `p1` is ignored. `any([...])` over such a decision is always `True`, which
saves everything. Nothing fails; only `print_saved_residuals` or a memory profile shows it.
(Combining them with `save_from_both_policies` raises instead: JAX110.)

## Fix safety
No fix: say which decision wins explicitly, for example
`d = p1(prim, *a, **k)` then `return p2(prim, *a, **k) if d is Recompute else d`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.return_paths import return_paths
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.binding.values import Kind, classify, is_builtin, leaves
from jax_lsp.core.findings import Finding
from jax_lsp.core.jax_api import POLICY_FACTORIES, policy_member
from jax_lsp.rules.base import Example, PolicyContext, Rule, saved_residuals_of_f

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_TRUE_DECISIONS = {
    Kind.SAVEABLE: "`Saveable`",
    Kind.RECOMPUTE: "`Recompute`",
    Kind.OFFLOADABLE: "`Offloadable(...)`",
}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _g_is_not_saved(namespace: dict[str, Any]) -> None:
    """`save_g` never decides: the value named 'g' is recomputed, not saved."""
    printed = saved_residuals_of_f(namespace)
    assert "named 'h'" in printed and "named 'g'" not in printed, printed


def _sin_is_not_saved(namespace: dict[str, Any]) -> None:
    """`sines` is ignored: no output of `sin` is saved."""
    printed = saved_residuals_of_f(namespace)
    assert "output of sin" not in printed, printed


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a policy's body, not entering nested functions and classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child for child in ast.iter_child_nodes(current) if not isinstance(child, _NESTED))


class DecisionsCombinedWithOr(Rule):
    code = "JAX118"
    traceable = False  # silent: the trace reports what is kept, not which policy should have decided

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        module, node = policy.module, policy.node
        scope = module.function_scope(node)
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        for statement in body:
            for found in _walk(statement):
                if isinstance(found, ast.BoolOp):
                    yield from self._bool_op(module, found, scope)
                elif isinstance(found, ast.Call):
                    yield from self._any_all(module, found, scope)

    def _bool_op(self, module: Module, node: ast.BoolOp, scope: Scope) -> Iterator[Finding]:
        word = "or" if isinstance(node.op, ast.Or) else "and"
        for operand in node.values[:-1]:
            decides = self._decides_with(module, operand, scope)
            if decides is None:
                continue
            text = module.source.segment(operand)
            if word == "or":
                effect = "`or` stops there and returns that decision, so what follows never decides"
            else:
                effect = "`and` moves past it, so its decision is ignored and what follows decides alone"
            yield self.finding(
                module,
                operand,
                f"`{text}` can return {decides}, which Python counts as true: {effect}; choose "
                f"explicitly: `d = {text}`, then `... if d is Recompute else d`",
            )

    def _any_all(self, module: Module, call: ast.Call, scope: Scope) -> Iterator[Finding]:
        func = call.func
        if not (
            isinstance(func, ast.Name)
            and func.id in ("any", "all")
            and is_builtin(func.id, scope)
            and len(call.args) == 1
            and isinstance(call.args[0], (ast.List, ast.Tuple))
        ):
            return
        for item in call.args[0].elts:
            decides = self._decides_with(module, item, scope)
            if decides is None:
                continue
            text = module.source.segment(item)
            effect = (
                "`any(...)` is always `True`, so everything is saved"
                if func.id == "any"
                else "`all(...)` ignores its decision"
            )
            yield self.finding(
                module, item, f"`{text}` can return {decides}, which Python counts as true: {effect}"
            )

    def _decides_with(self, module: Module, expr: ast.expr, scope: Scope) -> str | None:
        """What the operand evaluates to when that is a decision that is always true: a policy
        returning `Saveable`/`Recompute`/`Offloadable(...)`, called; None otherwise."""
        kind = classify(module, expr, scope)
        if kind in _TRUE_DECISIONS:
            return _TRUE_DECISIONS[kind]
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        if isinstance(func, ast.Call):  # `offload_dot_with_no_batch_dims("device", "pinned_host")(prim, ...)`
            return _factory_decides_with(module, func, scope)
        if not isinstance(func, (ast.Name, ast.Attribute)):
            return None
        found = module.definition(func, scope)
        if found is None:
            return None
        def_module, node, owner = found
        if isinstance(node, ast.Call):
            return _factory_decides_with(def_module, node, owner)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = def_module.function_scope(node)
            kinds = {
                classify(def_module, leaf, inner)
                for _, value in return_paths(node).values()
                if value is not None
                for leaf in leaves(value)
            }
            named = [text for kind, text in _TRUE_DECISIONS.items() if kind in kinds]
            if named:
                return " or ".join(named)
        return None

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Recompute, checkpoint_name

                cp = jax.checkpoint_policies
                save_h = cp.save_and_offload_only_these_names(
                    names_which_can_be_saved=["h"],
                    names_which_can_be_offloaded=[],
                    offload_src="device",
                    offload_dst="pinned_host",
                )
                save_g = cp.save_only_these_names("g")


                def policy(prim, *avals, **params):
                    decision = save_h(prim, *avals, **params)
                    return save_g(prim, *avals, **params) if decision is Recompute else decision


                def bools(prim, *avals, **params):
                    return save_g(prim, *avals, **params) or cp.dots_saveable(prim, *avals, **params)


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=policy)
                g = jax.checkpoint(block, policy=bools)
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
                save_h = cp.save_and_offload_only_these_names(
                    names_which_can_be_saved=["h"],
                    names_which_can_be_offloaded=[],
                    offload_src="device",
                    offload_dst="pinned_host",
                )
                save_g = cp.save_only_these_names("g")


                def policy(prim, *avals, **params):
                    return save_h(prim, *avals, **params) or save_g(prim, *avals, **params)


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=policy)
                """,
            misbehaves=_g_is_not_saved,
            lines=(16,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Recompute, Saveable


                def sines(prim, *avals, **params):
                    return Saveable if prim.name == "sin" else Recompute


                def policy(prim, *avals, **params):
                    return sines(prim, *avals, **params) and jax.checkpoint_policies.dots_saveable(
                        prim, *avals, **params
                    )


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)) @ x, policy=policy)
                """,
            misbehaves=_sin_is_not_saved,
            lines=(11,),
        ),
    ]


def _factory_decides_with(module: Module, call: ast.Call, scope: Scope) -> str | None:
    """What the policies of a factory call (`offload_dot_with_no_batch_dims(...)`) return, when
    that is not a bool."""
    factory = POLICY_FACTORIES.get(policy_member(module.qualname(call.func, scope)) or "")
    return factory.decides_with if factory is not None else None
