"""## What it does
Finds remat policies that compare the primitive (the policy's first parameter) with a
string: `prim == "dot_general"`, `prim != "sin"`, `prim in ("sin", "cos")`.

## Why is this bad?
`prim` is a `jax.core.Primitive` object, which never compares equal to a string. The test is
always False (always True for `!=` / `not in`), nothing raises, and the policy silently saves
nothing it meant to save: the job runs, slower or out of memory, with no hint why. Compare
the primitive's name, `prim.name == "dot_general"`, or the primitive itself,
`prim is jax.lax.dot_general_p`.

## Fix safety
The fix compares `prim.name` instead. It is unsafe: it changes which values the policy saves,
and so the memory the program uses, which is the point but should be a choice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import FunctionNode, Scope, string_constant
from jax_lsp.core.findings import Finding
from jax_lsp.rules.base import Example, PolicyContext, Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

_EQUALITY = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
_MEMBERSHIP = (ast.In, ast.NotIn)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _body_nodes(node: FunctionNode) -> Iterator[ast.AST]:
    stack: list[ast.AST] = list(node.body) if isinstance(node.body, list) else [node.body]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, _NESTED):
            stack.extend(ast.iter_child_nodes(current))


class PrimitiveComparedWithString(Rule):
    code = "JAX104"

    def check_policy(self, policy: PolicyContext) -> Iterator[Finding]:
        prim = policy.prim_name
        if prim is None:
            return
        module = policy.module
        scope = module.function_scope(policy.node)
        for node in _body_nodes(policy.node):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                if isinstance(op, _EQUALITY):
                    pairs = [(left, right), (right, left)]
                    prim_side = next(
                        (a for a, b in pairs if self._is_prim(a, prim) and string_constant(b) is not None),
                        None,
                    )
                elif isinstance(op, _MEMBERSHIP) and self._is_prim(left, prim):
                    prim_side = left if self._strings(module, right, scope) else None
                else:
                    prim_side = None
                if prim_side is not None:
                    yield self._finding(module, node, prim_side, op)

    @staticmethod
    def _is_prim(node: ast.expr, prim: str) -> TypeGuard[ast.Name]:
        return isinstance(node, ast.Name) and node.id == prim

    @staticmethod
    def _strings(module: Module, node: ast.expr, scope: Scope) -> bool:
        if isinstance(node, ast.Name):
            found = module.definition(node, scope)
            if found is None or not isinstance(found[1], ast.expr):
                return False
            node = found[1]
        return (
            isinstance(node, (ast.Tuple, ast.List, ast.Set))
            and bool(node.elts)
            and all(string_constant(e) is not None for e in node.elts)
        )

    def _finding(self, module: Module, compare: ast.Compare, prim_side: ast.Name, op: ast.cmpop) -> Finding:
        outcome = "True" if isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn)) else "False"
        text = module.source.segment(compare)
        message = (
            f"`{text}` is always {outcome}: `{prim_side.id}` is a jax.core.Primitive, never equal to a "
            f"string, so the policy silently decides the same for every primitive; compare `{prim_side.id}.name`"
        )
        fix = self.unsafe_fix(
            f"Compare `{prim_side.id}.name`", self.replace(module, prim_side, f"{prim_side.id}.name")
        )
        return self.finding(module, compare, message, [fix])

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax import lax


                def policy(prim, *avals, **params):
                    return prim.name == "sin" or str(prim) == "cos" or prim is lax.exp_p


                f = jax.checkpoint(lambda x: jnp.exp(jnp.sin(jnp.cos(x))), policy=policy)
                """
        ),
    ]

    @staticmethod
    def _saves_no_primitive_output(namespace: dict[str, Any]) -> None:
        import jax.numpy as jnp
        from jax._src.ad_checkpoint import saved_residuals

        residuals = saved_residuals(namespace["f"], jnp.ones((4, 4)))
        saved = [description for _, description in residuals if description.startswith("output of")]
        assert not saved, f"the policy saved {saved}"

    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim == "sin"


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp


                def policy(prim, *avals, **params):
                    return prim.name == "sin"


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            misbehaves=_saves_no_primitive_output,
            lines=(6,),
        ),
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp

                SAVED = ("sin", "cos")


                def policy(prim, *avals, **params):
                    if prim in SAVED:
                        return True
                    return False


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.cos(x))
                """,
            fixed="""
                import functools

                import jax
                import jax.numpy as jnp

                SAVED = ("sin", "cos")


                def policy(prim, *avals, **params):
                    if prim.name in SAVED:
                        return True
                    return False


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.cos(x))
                """,
            misbehaves=_saves_no_primitive_output,
            lines=(10,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                save_cos = lambda prim, *_, **__: prim == "cos"
                f = jax.remat(lambda x: jnp.sin(jnp.cos(x)), policy=save_cos)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                save_cos = lambda prim, *_, **__: prim.name == "cos"
                f = jax.remat(lambda x: jnp.sin(jnp.cos(x)), policy=save_cos)
                """,
            misbehaves=_saves_no_primitive_output,
            lines=(4,),
        ),
    ]
