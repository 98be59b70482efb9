"""## What it does
Finds a name given to a name-based policy factory (`save_only_these_names`,
`save_any_names_but_these`, `save_anything_except_these_names`, and the
`names_which_can_be_saved=` / `names_which_can_be_offloaded=` lists of
`save_and_offload_only_these_names`) that no `jax.ad_checkpoint.checkpoint_name(x, NAME)` tag
in reach carries: in the workspace, or in an installed package the workspace imports (a model
library may tag the names its users save).

A tag's name may be written in the call, be an f-string (`f"layer_{i}"` carries every name of
that shape), or come from a parameter or an attribute: `def tag(x, name): return
checkpoint_name(x, name)` tags what its callers pass. A name that cannot be known (a config
value given to the factory, a tag computed at run time) is never reported, and nothing is
reported when no tag at all is in reach (the model is out of sight).

## Why is this bad?
JAX matches the names as plain strings and says nothing when one matches no tag. A typo in
`save_only_these_names("attn_outt")` silently saves nothing under `attn_out`: the memory and
speed you planned for are gone, and only a profile shows it. `save_any_names_but_these` keeps
saving the value you meant to exclude, and an offload list offloads nothing.

## Fix safety
When a known name is close, the fix replaces the name with it. It is unsafe: the closest name
is a guess, and another one may have been meant.
"""

from __future__ import annotations

import contextlib
import io
import os
import re

from jax_lsp.core.checkpoint_names import NameUse, name_uses
from jax_lsp.core.model import Severity
from jax_lsp.core.module import Module
from jax_lsp.rules.base import Example, Rule, dedent_code

_EFFECT = {
    "save": "saves nothing under it",
    "offload": "offloads nothing under it",
    "exclude": "excludes nothing under it",
}
_QUOTE = re.compile(r"^([A-Za-z]*)('''|\"\"\"|'|\")")


def _residual_named_attn_out_is_missing(namespace: dict) -> None:
    """`print_saved_residuals` lists what the checkpointed `f` saves: 'attn_out' is not there."""
    import jax.numpy as jnp
    from jax.ad_checkpoint import print_saved_residuals

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(namespace["f"], jnp.ones((4, 4)))
    assert "named 'attn_out'" not in printed.getvalue(), printed.getvalue()


class CheckpointNameNotTagged(Rule):
    code = "JAX112"
    name = "checkpoint-name-not-tagged"
    severity = Severity.WARNING
    summary = "A policy names a checkpoint name that no checkpoint_name tag in reach carries"

    def check_module(self, module: Module):
        uses = name_uses(module)
        if not uses:
            return
        tags = module.loader.checkpoint_names().tags()
        if not tags.tags:
            return  # nothing in sight tags any name: the model is out of reach
        for use in uses:
            if not tags.carries(use.name):
                yield self._finding(module, use, tags.closest(use.name))

    def _finding(self, module: Module, use: NameUse, closest: str | None):
        message = (
            f'No `checkpoint_name` tag in reach carries "{use.name}": `{use.factory}` {_EFFECT[use.role]}, '
            "and JAX says nothing"
        )
        if closest is not None:
            message += f'; did you mean "{closest}"?'
        if use.place.path != module.path:  # the name is written in another module: say where
            where = f"{os.path.basename(use.place.path)}:{use.place.span.start.line + 1}"
            return self.finding(module, use.call.span, f"{message} (the name is written in {where})")
        span, fixes = use.place.span, []
        literal = module.source.line_text(span.start.line)[span.start.column : span.end.column]
        quote = _QUOTE.match(literal) if span.start.line == span.end.line else None
        if closest is not None and quote is not None:
            prefix, mark = quote.groups()
            if literal == f"{prefix}{mark}{use.name}{mark}":  # one plain literal, nothing escaped
                new_text = f"{prefix}{mark}{closest}{mark}"
                fixes.append(self.fix(f'Replace with "{closest}"', False, self.replace(module, span, new_text)))
        return self.finding(module, span, message, fixes)

    VALID = [
        Example(
            dedent_code(
                """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "attn_out")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_out"))
                """
            )
        ),
        Example(
            dedent_code(
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
            )
        ),
    ]
    INVALID = [
        Example(
            dedent_code(
                """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import checkpoint_name


                def block(x):
                    h = checkpoint_name(jnp.sin(x), "attn_out")
                    return jnp.sin(h)


                f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_outt"))
                """
            ),
            fixed=dedent_code(
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
            misbehaves=_residual_named_attn_out_is_missing,
            lines=(11,),
        ),
    ]
