"""The quick fixes' edits that need the workspace's analysis: the fix at a checkpoint without a
policy, and `import jax` where a fix writes a policy reading ``jax.`` into a module that does
not bind it (`suggested.py` makes the rest from the buffer's text alone)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from jax_lsp.server.features.advisor import suggested
from jax_lsp.server.features.advisor.advised import Advised
from jax_lsp.server.features.advisor.words import why_suggested
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.sites import default_policy_edits
from jax_lsp.trace.advisor.sites import importing_jax as importing_jax_in

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer


async def default_fix(
    ls: JaxLanguageServer, path: Path, found: Advised, chosen: PolicyAdvice, budget: int | None
) -> suggested.SuggestedFix | None:
    """At a checkpoint without a policy: the fix that passes the suggestion in the form its
    function takes (none when the buffer no longer has it there)."""
    analysis = await ls.built_analysis()
    if analysis is None:
        return None
    edits = await ls.run_analysis(default_policy_edits, analysis, str(path), found.span.start, chosen.policy)
    if not edits:
        return None
    why = why_suggested(found.advice, chosen, budget)
    return suggested.SuggestedFix(suggested.fix_title(chosen, why), tuple(edits))


async def importing_jax(
    ls: JaxLanguageServer, fix: suggested.SuggestedFix, policy: str
) -> suggested.SuggestedFix:
    """``fix`` with `import jax` where it writes ``policy`` into a file that does not import it
    (`sites.importing_jax`)."""
    analysis = await ls.built_analysis()
    if analysis is None or not fix.edits:
        return fix
    edits = await ls.run_analysis(importing_jax_in, analysis, list(fix.edits), policy)
    return replace(fix, edits=tuple(edits))
