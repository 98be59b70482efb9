"""## What it does
In the JAX releases whose new remat ignores them (0.10.2 to 0.11, by the facts of each release;
0.12 honours them), finds a remat policy written as a function (a `def`, a lambda, a `functools.partial` or a
factory's closure) or made by `save_from_both_policies(...)`, in a project that turns on JAX's new
remat for the process: `jax.config.update("jax_remat3", True)` or `JAX_REMAT3=1` set in code
(the scoped forms, `with config.remat3(True):` and test decorators, are not the project's switch). With the setting `new-remat = "always"` (for a project
preparing for the switch, which JAX describes as the coming default), every such policy is
reported.

## Why is this bad?
The new remat takes only data policies: `dots_saveable`, `dots_with_no_batch_dims_saveable`,
`everything_saveable`, `nothing_saveable` and the names policies (`save_only_these_names`,
`save_and_offload_only_these_names`...). It ignores a policy that is a function, silently: nothing
is saved, every intermediate is recomputed in the backward pass, and the memory and time the
policy was tuned for are gone without a message.

## Fix safety
A policy that saves the results of `dot_general` alone (`prim is lax.dot_general_p`,
`prim.name == "dot_general"`) is replaced by `jax.checkpoint_policies.dots_saveable`, which the
new remat honours. The fix is unsafe: `dots_saveable` also saves convolutions. Other policies
have no fix: tag the values to keep with `checkpoint_name` and use `save_only_these_names`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.scopes import string_constant
from jax_lsp.core.findings import Finding, Fix
from jax_lsp.core.jax_api import SAVE_FROM_BOTH
from jax_lsp.core.policies.resolve import BuiltinPolicy, PolicyFunction
from jax_lsp.rules.base import Example, Rule, SiteContext, saved_residuals_of_f

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_DOT_GENERAL = {"jax.lax.dot_general_p", "jax._src.lax.lax.dot_general_p"}


def _saves_only_dot_general(function: PolicyFunction) -> bool:
    """Whether the policy's whole body returns `prim is lax.dot_general_p` (or compares the
    primitive's name with "dot_general")."""
    node = function.node
    arguments = [*node.args.posonlyargs, *node.args.args]
    if function.bound_positional or not arguments:
        return False
    prim = arguments[0].arg
    body = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    if body and isinstance(body[0], ast.Expr) and string_constant(body[0].value) is not None:
        body = body[1:]  # the docstring
    if len(body) != 1:
        return False
    value = body[0] if isinstance(node, ast.Lambda) else getattr(body[0], "value", None)
    if isinstance(body[0], ast.stmt) and not isinstance(body[0], ast.Return):
        return False
    if not (isinstance(value, ast.Compare) and len(value.ops) == 1):
        return False
    left, op, right = value.left, value.ops[0], value.comparators[0]
    if isinstance(op, (ast.Is, ast.Eq)) and isinstance(left, ast.Name) and left.id == prim:
        scope = function.module.function_scope(node)
        return function.module.qualname(right, scope) in _DOT_GENERAL
    if isinstance(op, ast.Eq) and string_constant(right) == "dot_general":
        inner: ast.expr | None = None
        if isinstance(left, ast.Attribute) and left.attr == "name":  # prim.name
            inner = left.value
        elif (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "str"
            and left.args
        ):
            inner = left.args[0]  # str(prim)
        return isinstance(inner, ast.Name) and inner.id == prim
    return False


def _dot_results_not_saved(namespace: dict[str, Any]) -> None:
    """What JAX keeps for the backward pass: the argument alone, not the `dot_general` result the
    policy asks for."""
    printed = saved_residuals_of_f(namespace)
    assert "dot_general" not in printed, printed


class PolicyIgnoredByNewRemat(Rule):
    code = "JAX115"
    traceable = False  # a trace loads definitions only: the switch, a statement, is not run

    def check_site(self, site: SiteContext) -> Iterator[Finding]:
        functions = [t for t in site.targets if isinstance(t, PolicyFunction) and not t.in_save_from_both]
        combined = [t for t in site.targets if isinstance(t, BuiltinPolicy) and t.member == SAVE_FROM_BOTH]
        value = site.site.value
        if value is None or not (functions or combined):
            return
        facts = site.project.jax()
        ignored = facts.remat3.ignored if facts.remat3 is not None else frozenset()
        if not ("save_from_both_policies" in ignored if combined else "callable" in ignored):
            return  # this release has no new remat, or its new remat honours such policies
        switch = site.project.new_remat()
        if switch is None:
            return
        what = "`save_from_both_policies(...)`" if combined else "a policy written as a function"
        message = (
            f"In jax {facts.version}, the new remat (`jax_remat3`, turned on by {switch.where()}) "
            f"ignores {what}: nothing "
            "is saved and everything is recomputed in the backward pass; use a data policy "
            "(`jax.checkpoint_policies.dots_saveable`, or `save_only_these_names(...)` over "
            "`checkpoint_name` tags)"
        )
        yield self.finding(site.module, value, message, self._fixes(site, functions, combined))

    def _fixes(
        self, site: SiteContext, functions: list[PolicyFunction], combined: list[BuiltinPolicy]
    ) -> list[Fix]:
        value = site.site.value
        module = site.module
        if combined or len(functions) != 1 or value is None or not _saves_only_dot_general(functions[0]):
            return []
        if module.qualname(ast.Name("jax"), module.scope) != "jax":
            return []  # the module does not name `jax`: no spelling to write
        replacement = "jax.checkpoint_policies.dots_saveable"
        return [
            self.unsafe_fix(
                f"Use `{replacement}` (it saves convolutions too)", self.replace(module, value, replacement)
            )
        ]

    VALID = [
        Example(
            """
            import jax
            import jax.numpy as jnp

            jax.config.update("jax_remat3", True)


            def f(x):
                return jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=jax.checkpoint_policies.dots_saveable)(x)
            """
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp


            def save_dots(prim, *avals, **params):
                return prim is jax.lax.dot_general_p


            def f(x):
                return jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=save_dots)(x)
            """
        ),
    ]

    INVALID = [
        Example(
            """
            import jax
            import jax.numpy as jnp

            jax.config.update("jax_remat3", True)


            def save_dots(prim, *avals, **params):
                return prim is jax.lax.dot_general_p


            def f(x):
                return jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=save_dots)(x)
            """,
            fixed="""
            import jax
            import jax.numpy as jnp

            jax.config.update("jax_remat3", True)


            def save_dots(prim, *avals, **params):
                return prim is jax.lax.dot_general_p


            def f(x):
                return jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=jax.checkpoint_policies.dots_saveable)(x)
            """,
            misbehaves=_dot_results_not_saved,
            lines=(12,),
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            jax.config.update("jax_remat3", True)
            cp = jax.checkpoint_policies


            def is_sin(prim, *avals, **params):
                return prim.name == "sin"


            policy = cp.save_from_both_policies(cp.dots_saveable, is_sin)


            def f(x):
                return jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=policy)(x)
            """,
            misbehaves=_dot_results_not_saved,
            lines=(16,),
        ),
    ]
