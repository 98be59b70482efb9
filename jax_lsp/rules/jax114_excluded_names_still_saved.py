"""## What it does
Finds `jax.checkpoint_policies.save_anything_except_these_names(...)` where the JAX installed for
the project ignores its names: from jax 0.10.2 (the facts of each release) it is
`lambda *_, **__: True`, the same as `everything_saveable`. Older releases refuse the tags
themselves (and nothing is reported there), though a tagged value is still saved as the output of
the operation that computed it, which the policy saves like every other.

Only a call known to be given a name is reported: a name written there, or a starred list
(`*names`) that is a literal with a name in it, a name bound only to such literals, or one
that a test around the call shows non-empty (`if names:`, `if len(names) > 0:`, the `else` of
`if not names:`, after `if len(names) == 0: return ...`). Without names the call means "save
everything", which it does: a builder that calls it in the branch where its list is empty is
not reported there.

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

import ast
import operator
from collections.abc import Callable, Iterator

from jax_lsp.core.binding.guards import holding_tests
from jax_lsp.core.binding.reaching import reaching_values
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.findings import Finding
from jax_lsp.core.jax_api import policy_member
from jax_lsp.rules.base import Example, ModuleContext, Rule, saved_residuals_of_f

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MEMBER = "save_anything_except_these_names"


def _holds_a_name(call: ast.Call, scope: Scope) -> bool:
    """Whether the call is given at least one name: one written there, or a starred list known
    to be non-empty."""
    return any(
        not isinstance(argument, ast.Starred) or _non_empty(argument.value, call, scope)
        for argument in call.args
    )


def _non_empty(names: ast.expr, call: ast.Call, scope: Scope) -> bool:
    if isinstance(names, (ast.List, ast.Tuple, ast.Set)):
        return any(
            not isinstance(item, ast.Starred) or _non_empty(item.value, call, scope) for item in names.elts
        )
    if any(_shows_non_empty(test, truth, names) for test, truth in holding_tests(scope.node, call)):
        return True
    if not isinstance(names, ast.Name):
        return False
    values = reaching_values(names, scope)
    if values is None:
        binding, owner = scope.lookup(names.id)
        if (
            binding is None
            or owner is None
            or binding.kind != "assign"
            or not isinstance(binding.node, ast.expr)
        ):
            return False
        values = [binding.node]
    return bool(values) and all(
        isinstance(value, (ast.List, ast.Tuple, ast.Set)) and _non_empty(value, call, scope)
        for value in values
    )


def _shows_non_empty(test: ast.expr, truth: bool, names: ast.expr) -> bool:
    """Whether `test` having `truth` means `names` holds something: `names` or `len(names)`
    true, or a comparison of `len(names)` with a number that an empty list would not meet."""
    if truth and (_same(test, names) or _is_len_of(test, names)):
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, right = test.left, test.comparators[0]
    if _is_len_of(left, names) and _is_int(right):
        holds_for_empty = _compare(0, test.ops[0], right.value)  # type: ignore[attr-defined]
    elif _is_len_of(right, names) and _is_int(left):
        holds_for_empty = _compare(left.value, test.ops[0], 0)  # type: ignore[attr-defined]
    else:
        return False
    return holds_for_empty is not None and holds_for_empty != truth


def _same(a: ast.expr, b: ast.expr) -> bool:
    return ast.dump(a) == ast.dump(b)


def _is_len_of(expr: ast.expr, names: ast.expr) -> bool:
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "len"
        and len(expr.args) == 1
        and not expr.keywords
        and _same(expr.args[0], names)
    )


def _is_int(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and type(expr.value) is int


_COMPARISONS: dict[type[ast.cmpop], Callable[[int, int], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _compare(left: int, op: ast.cmpop, right: int) -> bool | None:
    compare = _COMPARISONS.get(type(op))
    return None if compare is None else compare(left, right)


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
            if not _holds_a_name(call, scope):
                continue  # no names: "save everything", which is what it does
            facts = facts or context.project.jax()
            if not facts.save_anything_except_these_names_saves_everything:
                return
            names = ", ".join(module.source.segment(argument) for argument in call.args)
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
