"""What a policy keeps, as the list under the table: its residuals grouped by the source line that
made them, the largest group first; the largest `SHOWN` groups, and the rest summed (``... 77 more
arrays, 1.2 GiB``), or every one (`advise --residuals all`). Residuals made on no line (the step's
arguments, constants and literals) are one group per kind. The JSON keeps every residual as is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.policy_advice import REASONS, Residual
from jax_lsp.trace.advisor.sizes import format_bytes

SHOWN = 10  # groups listed by default; the rest are summed in one line
_NAMES_SHOWN = 4  # argument names listed for a group without a line, by default
_NO_LINE = {"argument": "arguments", "constant": "constants", "literal": "literals", "computed": "no line"}
_ARGUMENT = "from the argument "


@dataclass(frozen=True)
class ResidualGroup:
    """The residuals made on one source line (``mlp.py:7``), or on none (``arguments``)."""

    where: str
    residuals: tuple[Residual, ...]

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.residuals)

    def text(self, every: bool = False) -> str:
        """``f32[8,16] x4 output of dot_general · saved by the policy``: each kind of array in the
        group (alike ones counted) and where it comes from, or each argument by its name (the
        largest `_NAMES_SHOWN`, ``every``: all), and why it is kept (once, where every one is kept
        for the same reason)."""
        on_a_line = self.residuals[0].made_on_a_line
        if on_a_line:
            parts = [(f"{_alike(r, n)} {r.description}".rstrip(), r) for r, n in _counted(self.residuals)]
        else:
            parts = _without_line(self.residuals, every)
        between = "; " if on_a_line else ", "
        if len({r.reason for r in self.residuals}) == 1:
            return between.join(text for text, _ in parts) + _why(self.residuals[0])
        return between.join(text + _why(r) for text, r in parts)


def _counted(residuals: tuple[Residual, ...]) -> list[tuple[Residual, int]]:
    """Each residual once with how many are equal to it (a Python loop's layers), in order."""
    return list(Counter(residuals).items())


def _alike(residual: Residual, count: int) -> str:
    """``f32[8,16] x4 → pinned_host stacked over 8 scan iterations``"""
    parts = [residual.label] + ([f"x{count}"] if count > 1 else [])
    if residual.memory == "host":
        parts.append("→ pinned_host")
    if residual.iterations is not None:
        parts.append(f"stacked over {residual.iterations} scan iterations")
    return " ".join(parts)


def _why(residual: Residual) -> str:
    return f" · {REASONS[residual.reason]}" if residual.reason is not None else ""


def _without_line(residuals: tuple[Residual, ...], every: bool) -> list[tuple[str, Residual]]:
    """``w1 f32[16,32]``, an argument by its name, the largest first (the first `_NAMES_SHOWN`
    unless ``every``, then ``… 3 more``); ``f32[] x2 from a literal``, what has no name."""
    named = sorted((r for r in residuals if r.description.startswith(_ARGUMENT)), key=lambda r: -r.bytes)
    unnamed = tuple(r for r in residuals if not r.description.startswith(_ARGUMENT))
    shown = named if every or len(named) <= _NAMES_SHOWN else named[: _NAMES_SHOWN - 1]
    parts = [(f"{r.description.removeprefix(_ARGUMENT).strip(chr(39))} {_alike(r, 1)}", r) for r in shown]
    if len(shown) < len(named):
        parts.append((f"… {len(named) - len(shown)} more", named[len(shown)]))
    return parts + [(f"{_alike(r, n)} {r.description}".rstrip(), r) for r, n in _counted(unnamed)]


def residual_groups(residuals: tuple[Residual, ...], root: Path | None) -> list[ResidualGroup]:
    """``residuals`` grouped by the line that made them (`ResidualGroup`), the largest first (in
    order of first appearance where equal)."""
    by_where: dict[str, list[Residual]] = {}
    for r in residuals:
        where = f"{relative(r.path, root)}:{r.line}" if r.made_on_a_line else _NO_LINE[r.kind]
        by_where.setdefault(where, []).append(r)
    groups = [ResidualGroup(where, tuple(found)) for where, found in by_where.items()]
    return sorted(groups, key=lambda g: -g.bytes)


def residual_rows(
    residuals: tuple[Residual, ...], root: Path | None, shown: int | None = SHOWN
) -> tuple[list[tuple[str, str, str]], str | None]:
    """(where, size, what) per group, the largest ``shown`` (None: every one), and the line that
    sums the rest (``... 77 more arrays, 1.2 GiB``), None where nothing is left out."""
    groups = residual_groups(residuals, root)
    kept = groups if shown is None else groups[:shown]
    rows = [(g.where, format_bytes(g.bytes), g.text(every=shown is None)) for g in kept]
    rest = groups[len(kept) :]
    if not rest:
        return rows, None
    count = sum(len(g.residuals) for g in rest)
    size = format_bytes(sum(g.bytes for g in rest))
    return rows, f"... {count} more array{'s' if count != 1 else ''}, {size}"
