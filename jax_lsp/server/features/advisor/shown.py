"""What the editor shows of a site's advice: the lens's title and the command it runs, the
hover's Markdown, the inlay hints' lines. Decisions only, free of LSP types: `feature.py`
turns them into LSP's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jax_lsp.server.features.advisor.advised import Advised
from jax_lsp.server.features.advisor.suggested import suggestion
from jax_lsp.server.features.advisor.words import budget_meaning, lens_summary, target_name, why_suggested
from jax_lsp.trace.advisor.hints import LineHint, line_hints
from jax_lsp.trace.advisor.sites import DEFAULT
from jax_lsp.trace.advisor.table import short_policy

# The commands the lens runs (the server registers them; docs/advise.md, "In the editor").
ADVISE = "jax-lsp.advisePolicy"
COMPARE = "jax-lsp.comparePolicies"
RUN = "jax-lsp.runPolicies"
WRITE = "jax-lsp.writePolicy"  # the quick fix "Write a policy for B" runs it


@dataclass(frozen=True)
class Lens:
    title: str
    command: str  # ADVISE or COMPARE


def lens(found: Advised | None, kind: str, has_example: bool) -> Lens:
    """The lens of a site of anchor ``kind``: its advice's summary (Compare opens it), or an
    invitation to advise (again, where the advice is stale, or to give an example)."""
    if found is not None and found.stale is not None:
        return Lens(f"Advise policy again: {found.stale}", ADVISE)
    if found is not None and found.advice.ok and found.advice.current is not None:
        return Lens(f"{lens_summary(found.advice, found.advice.current)} · Compare policies", COMPARE)
    if not has_example:
        return Lens("Advise policy: give an example (see docs/advise.md)", ADVISE)
    return Lens("Advise policy (none given: JAX's default)" if kind == DEFAULT else "Advise policy", ADVISE)


def hover_markdown(found: Advised, budget: int | None, to_do: str | None = None) -> str:
    """What the advice says, in short: the current policy, the suggestion (``to_do``: what to set
    and where, where no quick fix can edit it), how many candidates."""
    advice, current = found.advice, found.advice.current
    parts = [f"**jax-lsp advice** ({target_name(advice)}, jax {advice.jax_version or '?'})", ""]
    if found.stale is not None:
        parts.append(f"Outdated: {found.stale}.")
    elif current is not None:
        parts.append(f"- current `{short_policy(current.policy)}`: {lens_summary(advice, current)}")
        suggested = suggestion(advice, budget)
        if suggested is not None:
            parts.append(
                f"- suggested `{short_policy(suggested.policy)}`: {lens_summary(advice, suggested)} "
                f"{why_suggested(advice, suggested, budget)}"
            )
            if to_do is not None:
                parts.append(f"- to use it: {to_do}")
        elif budget is None:
            parts.append("- no suggestion: set `advise.budget` (e.g. `24GiB`) to get one")
        if budget is not None:
            parts.append(f"- {budget_meaning(advice, budget)}")
        parts.append(f"- {len(advice.policies)} candidates: Compare policies (the lens) shows them")
    else:
        parts.append(f"{advice.status}: {advice.message}")
    return "\n".join(parts)


def hints(found: Advised, path: Path, root: Path | None) -> list[LineHint]:
    """The inlay hints of an advised site of ``path``: what its current policy saves on the
    lines that make them, the rest counted on the site's line (`trace.advisor.hints`); none for
    stale advice."""
    current = found.current
    if current is None:
        return []
    residuals = [r for r in current.residuals if r.path == str(path) and r.line is not None]
    others = [r for r in current.residuals if r.path != str(path) or r.line is None]
    placed = list(zip(found.residual_lines, residuals))
    return line_hints(placed, others, found.span.start.line, root)
