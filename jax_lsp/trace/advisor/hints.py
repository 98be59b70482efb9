"""The advisor's inlay hints, as text: which line of the file shows which residuals.

Each value the policy saves (or offloads) is shown on the line of the open file that makes it,
in the checkpointed function or in the code it calls there (a Flax block's attention and MLP
submodules); the rest is one hint on the site's line that counts it: what the policy saves on
lines of other files, and what is kept whatever the policy (the checkpointed function's
inputs, the rest of the step the example runs), which is never called saved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.policy_advice import REASONS, Residual, grouped
from jax_lsp.trace.advisor.sizes import format_bytes

# The reasons of a residual the site's policy chose to keep (`advice.REASONS`).
CHOSEN_BY_THE_POLICY = ("policy", "named", "offloaded")
# The others, as the rest hint's tooltip counts them.
_KEPT_ANYWAY = {
    "argument": "inputs (of the checkpointed function, or of the step)",
    "default": "kept whatever the policy (made outside the checkpoint, or with an effect)",
}


@dataclass(frozen=True)
class LineHint:
    line: int  # 0-based
    label: str
    tooltip: str  # Markdown


def line_hints(
    placed: list[tuple[int, Residual]], others: Sequence[Residual], site_line: int, root: Path | None
) -> list[LineHint]:
    """The hints of a policy's residuals: ``placed``, those made on 0-based lines of the file,
    and ``others``, the rest (made in other files, or on no line). One hint per line that makes
    a value the policy saves; one on ``site_line`` that counts the rest made on some line."""
    by_line: dict[int, list[Residual]] = {}
    elsewhere: list[Residual] = []
    kept: list[Residual] = []
    for line, residual in placed:
        if residual.reason in CHOSEN_BY_THE_POLICY:
            by_line.setdefault(line, []).append(residual)
        else:
            kept.append(residual)
    for residual in others:  # the step's own arguments, made on no line, are the lens's to count
        if residual.reason in CHOSEN_BY_THE_POLICY:
            elsewhere.append(residual)
        elif residual.made_on_a_line:
            kept.append(residual)
    hints = [_line_hint(line, saved, root) for line, saved in sorted(by_line.items())]
    if elsewhere or kept:
        hints.append(_rest_hint(site_line, elsewhere, kept, root))
    return sorted(hints, key=lambda hint: hint.line)


def _line_hint(line: int, kept: list[Residual], root: Path | None) -> LineHint:
    groups = grouped(kept)
    if len(groups) == 1:
        label = hint_text(*groups[0])
    else:  # short enough not to be cut: the tooltip lists them
        label = f"saved {len(kept)} arrays {format_bytes(sum(r.bytes for r in kept))}"
    return LineHint(line, label, "\n\n".join(hint_tooltip(r, count, root) for r, count in groups))


def _rest_hint(
    site_line: int, elsewhere: list[Residual], kept: list[Residual], root: Path | None
) -> LineHint:
    """``+3 saved in other files 12 MiB · 22 kept anyway 5 MiB`` on the site's line."""
    parts, tooltip = [], []
    if elsewhere:
        parts.append(f"+{len(elsewhere)} saved in other files {_size(elsewhere)}")
        files = sorted({f"{relative(r.path, root)}:{r.line}" for r in elsewhere if r.made_on_a_line})
        tooltip.append(
            f"{_arrays(elsewhere)} the policy saves, made in other files"
            + (f" ({', '.join(files)})" if files else "")
        )
    if kept:
        parts.append(f"{'' if elsewhere else '+'}{len(kept)} kept anyway {_size(kept)}")
        reasons = Counter(_KEPT_ANYWAY.get(r.reason or "", "kept for a reason not told") for r in kept)
        lines = sorted({f"{relative(r.path, root)}:{r.line}" for r in kept if r.made_on_a_line})
        tooltip.append(
            f"{_arrays(kept)} kept whatever the policy says, never saved by it"
            + (f", made at {', '.join(lines)}" if lines else "")
            + ": "
            + ", ".join(f"{reason}: {count}" for reason, count in reasons.items())
        )
    return LineHint(site_line, " · ".join(parts), ".\n\n".join(tooltip) + ".")


def _size(residuals: Sequence[Residual]) -> str:
    return format_bytes(sum(r.bytes for r in residuals))


def _arrays(residuals: Sequence[Residual]) -> str:
    return f"{len(residuals)} array{'s' if len(residuals) != 1 else ''}"


def hint_text(residual: Residual, count: int) -> str:
    """``saved bf16[8,2048,4096] 128 MiB x32``: one residual, or ``count`` alike."""
    text = f"saved {residual.label} {format_bytes(residual.bytes)}"
    if count > 1:
        text += f" x{count}"
    if residual.memory == "host":
        text += " → pinned_host"
    if residual.iterations is not None:
        text += f" ×{residual.iterations}"
    return text


def hint_tooltip(residual: Residual, count: int, root: Path | None) -> str:
    """Why the residual is kept and which lines of the backward pass read it (Markdown)."""
    text = f"`{residual.label}`" + (f" x{count}" if count > 1 else "") + f" ({residual.description})"
    if residual.reason is not None:
        text += f": {REASONS[residual.reason]} (`{residual.reason}`)"
    if residual.used_by:
        text += ". Read by the backward pass at " + ", ".join(
            f"{relative(path, root)}:{line}" for path, line in residual.used_by
        )
    return text + "."
