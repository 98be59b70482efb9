"""The advisor's inlay hints, as text: which line of the file shows which residuals.

A residual is shown on the line that made it when that line is in the checkpointed function;
the file's other residuals (made by code the function calls, or by the rest of the step the
example runs) are one hint on the site's line, so that the function's own lines say what the
policy keeps and nothing is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jax_lsp.trace.advisor.advice import REASONS, Residual, grouped, relative
from jax_lsp.trace.advisor.sizes import format_bytes


@dataclass(frozen=True)
class LineHint:
    line: int  # 0-based
    label: str
    tooltip: str  # Markdown


def line_hints(
    placed: list[tuple[int, Residual]],
    function_lines: tuple[int, int] | None,
    site_line: int,
    root: Path | None,
) -> list[LineHint]:
    """The hints of residuals ``placed`` on 0-based lines: one per line of the checkpointed
    function (``function_lines``, first and last, 0-based; None: unknown, every line is its
    own), and one on ``site_line`` for the others."""
    by_line: dict[int, list[Residual]] = {}
    elsewhere: list[tuple[int, Residual]] = []
    for line, residual in placed:
        if function_lines is None or function_lines[0] <= line <= function_lines[1]:
            by_line.setdefault(line, []).append(residual)
        else:
            elsewhere.append((line, residual))
    hints = [_line_hint(line, kept, root) for line, kept in sorted(by_line.items())]
    if elsewhere:
        hints.append(_elsewhere_hint(site_line, elsewhere))
    return sorted(hints, key=lambda hint: hint.line)


def _line_hint(line: int, kept: list[Residual], root: Path | None) -> LineHint:
    groups = grouped(kept)
    if len(groups) == 1:
        label = hint_text(*groups[0])
    else:  # short enough not to be cut: the tooltip lists them
        label = f"saved {len(kept)} arrays {format_bytes(sum(r.bytes for r in kept))}"
    return LineHint(line, label, "\n\n".join(hint_tooltip(r, count, root) for r, count in groups))


def _elsewhere_hint(site_line: int, elsewhere: list[tuple[int, Residual]]) -> LineHint:
    size = format_bytes(sum(r.bytes for _, r in elsewhere))
    count = len(elsewhere)
    label = f"+{count} saved outside the checkpointed function, {size}"
    lines = sorted({line + 1 for line, _ in elsewhere})
    tooltip = (
        f"{count} residual{'s' if count != 1 else ''} of the step made on other lines of this file "
        f"({', '.join(str(n) for n in lines)}): code the checkpointed function calls, or the rest of "
        "the step the example runs."
    )
    return LineHint(site_line, label, tooltip)


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
