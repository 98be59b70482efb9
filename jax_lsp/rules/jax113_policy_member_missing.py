"""## What it does
Finds a member of `jax.checkpoint_policies` that the JAX installed for the project does not
have: a misspelt name (`dots_savable`), or one that only other releases have (the classes
`SaveOnlyTheseNames`... exist in jax 0.11 alone). The members of each release come from the facts
of that release; the message says which release it speaks for.

## Why is this bad?
`jax.checkpoint_policies` is a `SimpleNamespace`: a name it lacks raises `AttributeError` when the
line runs, which for a policy chosen in a config branch or a factory can be long after start-up,
and jedi and type checkers cannot see its members to warn earlier.

## Fix safety
Renaming to the closest member is unsafe: it is a guess at what was meant, and the two may save
different values.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.findings import Finding
from jax_lsp.rules.base import Example, ModuleContext, Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.jax_facts import JaxFacts

# Where the members live. `jax._src.ad_checkpoint` holds much else: not a namespace to check.
_NAMESPACES = ("jax.checkpoint_policies.", "jax.ad_checkpoint.checkpoint_policies.")
# The members every supported release has (tests/rules/test_jax113.py holds this to
# jax_facts.json): naming one needs no read of the installed release's facts.
IN_EVERY_RELEASE = frozenset(
    {
        "checkpoint_dots",
        "checkpoint_dots_with_no_batch_dims",
        "dots_saveable",
        "dots_with_no_batch_dims_saveable",
        "everything_saveable",
        "nothing_saveable",
        "offload_dot_with_no_batch_dims",
        "save_and_offload_only_these_names",
        "save_any_names_but_these",
        "save_anything_except_these_names",
        "save_from_both_policies",
        "save_only_these_names",
    }
)


def _named_member(module: Module, expr: ast.expr, scope: Scope) -> str | None:
    """The member of `jax.checkpoint_policies` that `expr` names (`cp.dots_saveable`), if any."""
    qualname = module.qualname(expr, scope)
    for prefix in _NAMESPACES:
        if qualname is not None and qualname.startswith(prefix) and "." not in qualname[len(prefix) :]:
            return qualname[len(prefix) :]
    return None


def _releases_with(member: str) -> list[str]:
    from jax_lsp.core.jax_facts import facts_for, supported_releases  # here: read only for a finding

    return [release for release in supported_releases() if member in facts_for(release).policies]


class PolicyMemberMissing(Rule):
    code = "JAX113"

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        if "checkpoint_policies" not in module.source.text:
            return  # every spelling of the namespace comes from a line that names it
        facts = None  # read at the first member named (a costly read): many modules name none
        seen: set[int] = set()
        for node, scope in self._references(module):
            member = _named_member(module, node, scope)
            if member is None or member in IN_EVERY_RELEASE or id(node) in seen:
                continue
            facts = facts or context.project.jax()
            if member in facts.policies:
                continue
            seen.add(id(node))
            yield self._finding(module, node, member, facts)

    @staticmethod
    def _references(module: Module) -> Iterator[tuple[ast.expr, Scope]]:
        """The attribute paths the module calls, and those its calls pass as arguments (`policy=`)."""
        for call, scope in module.calls:
            if isinstance(call.func, ast.Attribute):
                yield call.func, scope
            for value in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(value, ast.Attribute):
                    yield value, scope

    def _finding(self, module: Module, node: ast.expr, member: str, facts: JaxFacts) -> Finding:
        import difflib  # here: only a missing member needs it (start-up time)

        close = difflib.get_close_matches(member, sorted(facts.policies), n=1)
        elsewhere = _releases_with(member)
        where = f" (it is in jax {elsewhere[0]}-{elsewhere[-1]})" if elsewhere else ""
        message = (
            f"`jax.checkpoint_policies` has no `{member}` in jax {facts.version}{where}: the line raises "
            "`AttributeError`"
        )
        fixes = []
        if close and isinstance(node, ast.Attribute):
            message += f"; did you mean `{close[0]}`?"
            span = module.source.span(node)
            start = span.end.replace(column=span.end.column - len(member))
            fixes.append(
                self.unsafe_fix(
                    f"Rename to `{close[0]}`", self.replace(module, span.replace(start=start), close[0])
                )
            )
        return self.finding(module, node, message, fixes)

    VALID = [
        Example(
            """
            import jax
            import jax.numpy as jnp

            cp = jax.checkpoint_policies
            f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=cp.dots_saveable)
            """
        ),
    ]

    INVALID = [
        Example(
            """
            import jax
            import jax.numpy as jnp

            cp = jax.checkpoint_policies
            f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=cp.dots_savable)
            """,
            fixed="""
            import jax
            import jax.numpy as jnp

            cp = jax.checkpoint_policies
            f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=cp.dots_saveable)
            """,
            error="has no attribute 'dots_savable'",
            lines=(5,),
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            save = jax.checkpoint_policies
            f = jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), policy=save.save_only_these_name("attn"))
            """,
            fixed="""
            import jax
            import jax.numpy as jnp

            save = jax.checkpoint_policies
            f = jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), policy=save.save_only_these_names("attn"))
            """,
            error="has no attribute 'save_only_these_name'",
            lines=(5,),
        ),
    ]
