"""## What it does
Finds a tuple, list or set of checkpoint names given as *one* argument to a factory that takes
each name as its own argument: `save_only_these_names(("q", "k"))`,
`save_any_names_but_these(NAMES)` where `NAMES = ["q", "k"]`. The container may be written in
the call or be a name bound to one (here or in another module).

`save_and_offload_only_these_names(names_which_can_be_saved=[...], ...)` takes lists by
keyword on purpose and is not reported. Nor is `save_anything_except_these_names`, which
ignores its names altogether in the JAX releases checked (0.10.2, 0.12).

## Why is this bad?
These factories take `*names` and make a `frozenset` of them. A tuple is then one member, the
tuple itself, which no `checkpoint_name` tag carries: `save_only_these_names(("q", "k"))` saves
nothing named and `save_any_names_but_these(("q",))` excludes nothing, silently; only a memory
profile shows it. A list or a set cannot be a member of a set: the factory raises
`TypeError: unhashable type: 'list'` as soon as it is called (an error, not a warning).

## Fix safety
The fix unpacks the container, `save_only_these_names("q", "k")`, or `*NAMES` for a name bound
to one. It is safe: each name becomes the argument the factory expects, and nothing else
changes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.findings import Finding, Fix, Severity, Span
from jax_lsp.core.jax_api import POLICY_FACTORIES, policy_member
from jax_lsp.rules.base import Example, ModuleContext, Rule, saved_residuals_of_f

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HASHABLE = (ast.Tuple,)
_UNHASHABLE = (ast.List, ast.Set, ast.ListComp, ast.SetComp)
# Bytes a file calling a factory of names holds (the call, or the import of an alias).
_MARKERS = ("these_names", "names_but_these")


def _h_is_not_saved(namespace: dict[str, Any]) -> None:
    """`print_saved_residuals` lists what `f` saves: the value named 'h' is not there."""
    printed = saved_residuals_of_f(namespace)
    assert "named 'h'" not in printed, printed


def _h_is_saved(namespace: dict[str, Any]) -> None:
    """The value named 'h', which the policy should exclude, is saved."""
    printed = saved_residuals_of_f(namespace)
    assert "named 'h'" in printed, printed


class NamesPassedAsOneContainer(Rule):
    code = "JAX116"
    traceable = False  # silent: the probe's names and primitives cannot show what the model loses

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        if not any(marker in module.source.text for marker in _MARKERS):
            return
        for call, scope in module.calls:
            member = policy_member(module.qualname(call.func, scope))
            factory = POLICY_FACTORIES.get(member or "")
            if factory is None or not factory.hashes_names:
                continue
            for argument in call.args:
                found = self._argument(module, call, argument, scope, factory.name)
                if found is not None:
                    yield found

    def _argument(
        self, module: Module, call: ast.Call, argument: ast.expr, scope: Scope, factory: str
    ) -> Finding | None:
        if isinstance(argument, (*_HASHABLE, *_UNHASHABLE)):
            container: ast.expr = argument
            fixes = self._unpack_literal(module, call, argument)
        elif isinstance(argument, (ast.Name, ast.Attribute)):
            found = module.definition(argument, scope)
            if found is None or not isinstance(found[1], (*_HASHABLE, *_UNHASHABLE)):
                return None
            container = found[1]
            fixes = [
                self.safe_fix(
                    "Unpack it", self.replace(module, argument, f"*{module.source.segment(argument)}")
                )
            ]
        else:
            return None
        text = module.source.segment(argument)
        if isinstance(container, _HASHABLE):
            effect = (
                "nothing under these names is saved"
                if factory == "save_only_these_names"
                else "none of these names is excluded"
            )
            message = (
                f"`{factory}` takes each name as its own argument: the tuple `{text}` is one name that no "
                f"`checkpoint_name` tag carries, so {effect}, and JAX says nothing; unpack it"
            )
            return self.finding(module, argument, message, fixes)
        kind = "set" if isinstance(container, (ast.Set, ast.SetComp)) else "list"
        message = (
            f"`{factory}` takes each name as its own argument: the {kind} `{text}` is one argument, and JAX "
            f"raises `TypeError: unhashable type: '{kind}'` when the policy is made; unpack it"
        )
        return self.finding(module, argument, message, fixes, severity=Severity.ERROR)

    def _unpack_literal(self, module: Module, call: ast.Call, container: ast.expr) -> list[Fix]:
        if isinstance(container, (ast.ListComp, ast.SetComp)):
            text = module.source.segment(container)
            return [self.safe_fix("Unpack it", self.replace(module, container, f"*{text}"))]
        assert isinstance(container, (ast.Tuple, ast.List, ast.Set))
        items = container.elts
        if not items:
            if len(call.args) != 1 or call.keywords:
                return []
            return [self.safe_fix("Pass no names", self.replace(module, container, ""))]
        first, last = module.source.span(items[0]), module.source.span(items[-1])
        text = module.source.segment(Span(first.start, last.end))
        return [self.safe_fix("Pass each name as its own argument", self.replace(module, container, text))]

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name

                cp = jax.checkpoint_policies
                NAMES = ("h", "g")


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=cp.save_only_these_names(*NAMES))
                g = jax.checkpoint(block, policy=cp.save_any_names_but_these("h", "g"))
                h = jax.checkpoint(
                    block,
                    policy=cp.save_and_offload_only_these_names(
                        names_which_can_be_saved=["h"],
                        names_which_can_be_offloaded=[],
                        offload_src="device",
                        offload_dst="pinned_host",
                    ),
                )
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names(("h", "g")))
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("h", "g"))
                """,
            misbehaves=_h_is_not_saved,
            lines=(12,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name

                cp = jax.checkpoint_policies
                EXCLUDED = ["h"]


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=cp.save_any_names_but_these(EXCLUDED))
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name

                cp = jax.checkpoint_policies
                EXCLUDED = ["h"]


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=cp.save_any_names_but_these(*EXCLUDED))
                """,
            error="unhashable type: 'list'",
            lines=(14,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_any_names_but_these(("h",)))
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "h")
                    g = checkpoint_name(jnp.sin(h), "g")
                    return jnp.sin(g)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_any_names_but_these("h"))
                """,
            misbehaves=_h_is_saved,
            lines=(12,),
        ),
    ]
