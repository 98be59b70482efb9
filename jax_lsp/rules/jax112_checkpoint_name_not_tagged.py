"""## What it does
Finds a name given to a name-based policy factory (`save_only_these_names`,
`save_any_names_but_these`, `save_anything_except_these_names`, and the
`names_which_can_be_saved=` / `names_which_can_be_offloaded=` lists of
`save_and_offload_only_these_names`) that no `jax.ad_checkpoint.checkpoint_name(x, NAME)` tag
in reach carries, while a tagged name close to it does: a typo. Tags in reach are those of the
workspace and of the installed packages it imports (a model library may tag the names its
users save).

A tag's name may be written in the call, be an f-string (`f"layer_{i}"` carries every name of
that shape), or come from a parameter or an attribute: `def tag(x, name): return
checkpoint_name(x, name)` tags what its callers pass. A name that cannot be known (a config
value given to the factory, a tag computed at run time) is never reported. Nor is a name
unlike every tagged one: it may be tagged out of sight, as when a library offers policies for
its users' models (praxis's `SAVE_UNET_CONV` names `conv_out`, which no released code tags);
the editor's hover on the name still says that nothing in reach tags it.

## Why is this bad?
JAX matches the names as plain strings and says nothing when one matches no tag. A typo in
`save_only_these_names("attn_outt")` silently saves nothing under `attn_out`: the memory and
speed you planned for are gone, and only a profile shows it. `save_any_names_but_these` keeps
saving the value you meant to exclude, and an offload list offloads nothing.

## Fix safety
The fix replaces the name with the closest tagged one. It is unsafe: the closest name is a
guess, and another one may have been meant. When only a shape is close (`f"layer_{i}"`), there
is no fix: which name of that shape was meant is not known.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.findings import Finding
from jax_lsp.core.tags.tags import NameUse, name_uses
from jax_lsp.rules.base import Example, ModuleContext, Rule, saved_residuals_of_f

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jax_lsp.core.tags.index import Suggestion

_EFFECT = {
    "save": "saves nothing under it",
    "offload": "offloads nothing under it",
    "exclude": "excludes nothing under it",
}
_QUOTE = r"^([A-Za-z]*)('''|\"\"\"|'|\")"  # compiled at its first use (re.match)


def _residual_named_attn_out_is_missing(namespace: dict[str, Any]) -> None:
    """`print_saved_residuals` lists what the checkpointed `f` saves: 'attn_out' is not there."""
    printed = saved_residuals_of_f(namespace)
    assert "named 'attn_out'" not in printed, printed


class CheckpointNameNotTagged(Rule):
    code = "JAX112"
    traceable = False  # the trace tags every name the policy mentions on its probe function

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        uses = name_uses(module)
        if not uses:
            return
        tags = context.project.tags().tags_carrying(use.name for use in uses)
        for use in uses:
            if tags.carries(use.name):
                continue
            # A name like no tagged one may be tagged out of sight (a library's policies for
            # its users' models); one close to a tagged name is a typo.
            closest = tags.closest(use.name)
            if closest is not None:
                yield self._finding(module, use, closest)

    def _finding(self, module: Module, use: NameUse, closest: Suggestion) -> Finding:
        meant = f'"{closest.text}"' if closest.exact else f"a name of the shape `{closest.text}`"
        message = (
            f'No `checkpoint_name` tag in reach carries "{use.name}": `{use.factory}` {_EFFECT[use.role]}, '
            f"and JAX says nothing; did you mean {meant}?"
        )
        if use.place.path != module.path:  # the name is written in another module: say where
            where = f"{os.path.basename(use.place.path)}:{use.place.span.start.line + 1}"
            return self.finding(module, use.call.span, f"{message} (the name is written in {where})")
        span, fixes = use.place.span, []
        literal = module.source.line_text(span.start.line)[span.start.column : span.end.column]
        quote = re.match(_QUOTE, literal) if span.start.line == span.end.line else None
        if closest.exact and quote is not None:
            prefix, mark = quote.groups()
            if literal == f"{prefix}{mark}{use.name}{mark}":  # one plain literal, nothing escaped
                new_text = f"{prefix}{mark}{closest.text}{mark}"
                fixes.append(
                    self.unsafe_fix(f'Replace with "{closest.text}"', self.replace(module, span, new_text))
                )
        return self.finding(module, span, message, fixes)

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "attn_out")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_out"))
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name as name

                LAYERS = 2


                def block(x):
                    for i in range(LAYERS):
                        x = name(jnp.sin(x), f"layer_{i}")
                    return x


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_any_names_but_these("layer_1"))
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
                    h = checkpoint_name(jnp.sin(x), "attn_out")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_outt"))
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "attn_out")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_out"))
                """,
            misbehaves=_residual_named_attn_out_is_missing,
            lines=(11,),
        ),
    ]
