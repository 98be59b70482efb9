"""## What it does
Finds a policy factory of `jax.checkpoint_policies` (`save_only_these_names`,
`save_any_names_but_these`, `save_anything_except_these_names`, `save_from_both_policies`,
`offload_dot_with_no_batch_dims`, `save_and_offload_only_these_names`) passed as a policy
without being called, directly or through a name, or held by a table of policies that a key
chosen at run time looks up (`POLICIES[config.remat]`, a `get_policy(name)` returning
`POLICIES[name]`): the finding is at the table's entry and names the key that selects it.
A table looked up only with constant keys (`POLICIES["dots"]`) is reported the same at each
uncalled factory it holds, though no key used today selects it: selecting it later raises. One
finding per entry, however many sites look the table up; a table counts as one of policies
when its every entry is a member of `jax.checkpoint_policies` or a function, with at least
one member. A table in another module than the lookup is reported there too, at the entry,
whatever module looks it up (a literal key given to its `pick(name)` helper included), as the
table's module is checked beside the modules that look it up (a whole tree, a named file with
the files that could use it, the editor's indexed workspace); a run-time key's site also keeps
its own finding, which names the entry's file and line.

## Why is this bad?
A factory *makes* a policy from its arguments (the names to save, two policies, the memory
kinds). Passed uncalled, JAX calls the factory itself once per primitive as
`factory(prim, *avals, **params)`, which fails at the first `jax.grad` with a confusing
`TypeError: save_only_these_names() got an unexpected keyword argument 'accuracy'`.

## Fix safety
A factory of names (`save_only_these_names`, `save_any_names_but_these`,
`save_anything_except_these_names`, `save_and_offload_only_these_names`) gets an unsafe fix that
calls it with the names in reach: those the `checkpoint_name` tags of the project and of the
packages it imports give, the site's own module's first (for `save_and_offload_only_these_names`,
as the names it saves, offloading none). It stops the crash; only the author knows which of the
names the policy should get, so it is never applied by `--fix` alone (`--unsafe-fixes`). The
other factories, and a names factory where no tag is in reach, get no fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from jax_lsp.core.findings import Finding, Fix
from jax_lsp.core.jax_api import POLICY_FACTORIES
from jax_lsp.core.policies.resolve import BuiltinPolicy
from jax_lsp.rules.base import Example, Rule, SiteContext

# The factories that take names, and how a call gives them the names (``{names}``).
_NAMES_CALLS = {
    "save_only_these_names": "({names})",
    "save_any_names_but_these": "({names})",
    "save_anything_except_these_names": "({names})",
    "save_and_offload_only_these_names": (
        "(names_which_can_be_saved=[{names}], names_which_can_be_offloaded=[], "
        'offload_src="device", offload_dst="pinned_host")'
    ),
}


class PolicyFactoryUncalled(Rule):
    code = "JAX107"

    def check_site(self, site: SiteContext) -> Iterator[Finding]:
        for target in site.targets:
            if not isinstance(target, BuiltinPolicy) or target.call is not None:
                continue
            if target.member not in POLICY_FACTORIES:
                continue
            yield self.finding(
                site.module,
                site.anchor(target.module, target.expr),
                f"`{target.member}` makes a policy and must be called: call it with "
                f"{POLICY_FACTORIES[target.member].takes}; passed uncalled, JAX calls it with each primitive "
                f"and raises `TypeError` at the first grad{site.chosen(target)}",
                self._call_with_names(site, target),
            )

    def _call_with_names(self, site: SiteContext, target: BuiltinPolicy) -> list[Fix]:
        """A names factory written in the site's module: the unsafe fix that calls it with the
        names tagged in reach, the module's own first; none where nothing in reach is tagged."""
        call = _NAMES_CALLS.get(target.member)
        if call is None or target.module is not site.module:
            return []
        tags = site.project.tags().tags().tags
        own = sorted({t.name for t in tags if t.name is not None and t.place.path == site.module.path})
        names = own + sorted({t.name for t in tags if t.name is not None} - set(own))
        if not names:
            return []
        spelled = site.module.source.segment(target.expr)
        listed = ", ".join(_quoted(name) for name in names)
        title = f"Call `{spelled}` with the names tagged in reach: {listed}"
        return [
            self.unsafe_fix(
                title, self.replace(site.module, target.expr, spelled + call.format(names=listed))
            )
        ]

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def g(x):
                    return jnp.sin(checkpoint_name(jnp.sin(x), "inner"))


                f = jax.checkpoint(g, policy=jax.checkpoint_policies.save_only_these_names("inner"))
                """
        ),
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies
                policy = cp.save_from_both_policies(cp.dots_saveable, cp.save_any_names_but_these("big"))


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.sin(x))
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def g(x):
                    return jnp.sin(checkpoint_name(jnp.sin(x), "inner"))


                f = jax.checkpoint(g, policy=jax.checkpoint_policies.save_only_these_names)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def g(x):
                    return jnp.sin(checkpoint_name(jnp.sin(x), "inner"))


                f = jax.checkpoint(g, policy=jax.checkpoint_policies.save_only_these_names("inner"))
                """,
            error="save_only_these_names() got an unexpected keyword argument",
            lines=(10,),
        ),
        Example(
            """
                import functools

                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies
                policy = cp.save_anything_except_these_names


                @functools.partial(jax.checkpoint, policy=policy)
                def f(x):
                    return jnp.sin(jnp.sin(x))
                """,
            error="save_anything_except_these_names() got an unexpected keyword argument",
            lines=(10,),
        ),
    ]


def _quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
