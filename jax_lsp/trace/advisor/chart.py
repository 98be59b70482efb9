"""The advice as a picture: every candidate a point, its memory against its recompute, the
budget a line, the current and the suggested policies marked (`jax-lsp advise --plot`, the
editor's "Compare policies"). Hand-written SVG: no plotting package.

Both axes are linear from zero: nothing_saveable recomputes, and a policy that keeps nothing
keeps 0 bytes, so zero is on both axes, and distances read as the trade-off does. Points
close together are told apart by their labels, laid out in a column beside the plot with a
leader line each; candidates at the same coordinates share one label.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from jax_lsp.trace.advisor.advice import Advice, PolicyAdvice
from jax_lsp.trace.advisor.report import heading, policy_label
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops

_PLOT_LEFT, _PLOT_TOP, _PLOT_WIDTH, _PLOT_HEIGHT = 96, 64, 380, 300
_LABEL_GAP = 36  # from the plot's right edge to the label column
_LINE = 15  # a label line's height
_CHAR = 7.3  # a 12px monospace character's width
_WRAP = 48  # characters of a label line before it wraps at ", "
_COLORS = {"candidate": "#4c72b0", "current": "#dd8452", "suggested": "#2ca02c", "budget": "#c44e52"}
_MONO = "ui-monospace, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
_SANS = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif"


def memory_axis(advice: Advice) -> tuple[str, Callable[[PolicyAdvice], int | None]]:
    """The memory axis's title and what a candidate is plotted at on it (None: not drawn): the
    one place that decides which of the advice's memory figures the picture shows."""
    if advice.on_tpu and advice.target is not None:
        return (
            f"the step's memory on one chip at its peak (compiled for {advice.target.name})",
            advice.budgeted_bytes,
        )
    measure = "compiled" if advice.compiled else "estimated"
    return f"the step's temporaries at their peak ({measure})", advice.budgeted_bytes


def chart_svg(advices: Sequence[Advice], root: Path | None, budget: int | None = None) -> str:
    """One chart per site, top to bottom, as one SVG document."""
    charts = [_chart(advice, root, budget) for advice in advices]
    width = max((c.width for c in charts), default=1)
    height, parts = 0.0, []
    for chart in charts:
        parts.append(
            f'<svg class="site" x="0" y="{height:g}" width="{chart.width:g}" height="{chart.height:g}">'
            f"{chart.body}</svg>"
        )
        height += chart.height
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}" '
        f'viewBox="0 0 {width:g} {height:g}">\n' + "\n".join(parts) + "\n</svg>\n"
    )


@dataclass(frozen=True)
class _Svg:
    width: float
    height: float
    body: str


@dataclass
class _Group:
    """Candidates at the same coordinates: one label for them all."""

    memory: int
    flops: int
    policies: list[PolicyAdvice]
    x: float = 0.0
    y: float = 0.0
    lines: tuple[tuple[bool, bool, str], ...] = ()  # (continues the line above, marked, text)
    top: float = 0.0  # where its label block starts


def _text(x: float, y: float, text: str, **attributes: str | float) -> str:
    extra = "".join(f" {key.replace('_', '-')}={quoteattr(str(value))}" for key, value in attributes.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{escape(text)}</text>'


def _ticks(top: int, unit: int) -> list[int]:
    """Round values from 0 to at least ``top``, about five, in steps of 1, 2 or 5 ``unit``s."""
    if top <= 0:
        return [0]
    raw = top / unit / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    step = max(1, round(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw) * unit))
    return [i * step for i in range(math.ceil(top / step) + 1)]


def _byte_unit(top: int) -> int:
    """The power of 1024 `format_bytes` writes ``top`` in, so that ticks are round in it."""
    unit = 1
    while unit * 1024 <= top and unit < 1024**4:
        unit *= 1024
    return unit


def _wrap(text: str) -> list[str]:
    """``text`` in lines of about `_WRAP` characters, broken after ", " or "(" (drawn indented)."""
    lines: list[str] = []
    current = ""
    for piece in re.split(r"(?<=, )|(?<=\()", text):
        if current and len(current + piece.rstrip()) > _WRAP:
            lines.append(current.rstrip())
            current = piece
        else:
            current += piece
    return [*lines, current]


def _marks(policy: PolicyAdvice, suggested: PolicyAdvice | None) -> list[str]:
    return [m for m, on in (("current", policy.current), ("suggested", policy is suggested)) if on]


def _label(policy: PolicyAdvice, suggested: PolicyAdvice | None) -> list[str]:
    """The policy's label in lines, ``(current)``, ``(suggested)`` after it."""
    *lines, last = _wrap(policy_label(policy))
    marks = _marks(policy, suggested)
    return [*lines, last + (f" ({', '.join(marks)})" if marks else "")]


def _shape(kind: str, x: float, y: float, classes: str = "", tip: str = "") -> str:
    """A diamond for the suggested policy, a ringed circle for the current one, else a dot."""
    color = _COLORS[kind]
    cls = f' class="{classes}"' if classes else ""
    inner = f"<title>{escape(tip)}</title>" if tip else ""
    if kind == "suggested":
        points = f"{x:.1f},{y - 8:.1f} {x + 8:.1f},{y:.1f} {x:.1f},{y + 8:.1f} {x - 8:.1f},{y:.1f}"
        return f'<polygon{cls} points="{points}" fill="{color}" stroke="#1a1a1a">{inner}</polygon>'
    if kind == "current":
        style = 'r="7" stroke="#1a1a1a" stroke-width="2"'
    else:
        style = 'r="5" fill-opacity="0.8" stroke="#ffffff"'
    return f'<circle{cls} cx="{x:.1f}" cy="{y:.1f}" fill="{color}" {style}>{inner}</circle>'


def _marker(policy: PolicyAdvice, suggested: PolicyAdvice | None, x: float, y: float, tip: str) -> str:
    marks = _marks(policy, suggested)
    kind = marks[-1] if marks else "candidate"
    return _shape(kind, x, y, " ".join(["candidate", *marks]), tip)


def _place_labels(groups: list[_Group], top: float, bottom: float) -> None:
    """Each label block as near its point's height as the blocks above and below allow."""
    ordered = sorted(groups, key=lambda g: g.y)
    floor = top
    for group in ordered:
        group.top = max(group.y - _LINE / 2, floor)
        floor = group.top + len(group.lines) * _LINE + 4
    ceiling = max(bottom, floor)
    for group in reversed(ordered):
        group.top = max(min(group.top, ceiling - len(group.lines) * _LINE - 4), top)
        ceiling = group.top


def _chart(advice: Advice, root: Path | None, budget: int | None) -> _Svg:
    title = f"Remat policies at {heading(advice, root)}"
    if not advice.ok:
        width = max(600, len(title) * 8.0 + 40)
        body = _text(16, 28, title, font_size=15, font_weight="bold", font_family=_SANS)
        body += _text(16, 52, f"Not advised: {advice.message}", font_size=12, font_family=_SANS)
        return _Svg(width, 72, f'<rect width="100%" height="100%" fill="#ffffff"/>{body}')

    axis_title, memory_of = memory_axis(advice)
    suggested = advice.suggest(budget) if budget is not None else None
    groups: dict[tuple[int, int], _Group] = {}
    undrawn: list[str] = []
    for policy in advice.policies:
        memory = memory_of(policy) if policy.error is None else None
        if policy.error is not None:
            undrawn.append(f"{policy_label(policy)}: rejected by JAX")
        elif advice.compiled and not policy.was_compiled:
            undrawn.append(f"{policy_label(policy)}: not compiled (the budget's suggestion did not need it)")
        elif memory is None or policy.recompute_flops is None:
            undrawn.append(f"{policy_label(policy)}: no figure on this JAX release")
        else:
            key = (memory, policy.recompute_flops)
            groups.setdefault(key, _Group(memory, policy.recompute_flops, [])).policies.append(policy)

    top_memory = max([g.memory for g in groups.values()] + [budget or 0])
    top_flops = max((g.flops for g in groups.values()), default=0)
    y_ticks = _ticks(top_memory, _byte_unit(top_memory))
    x_ticks = _ticks(top_flops, 1)
    y_max, x_max = max(y_ticks[-1], 1), max(x_ticks[-1], 1)
    left, plot_top, bottom = _PLOT_LEFT, _PLOT_TOP, _PLOT_TOP + _PLOT_HEIGHT
    right = left + _PLOT_WIDTH

    def x_at(flops: int) -> float:
        return left + flops / x_max * _PLOT_WIDTH

    def y_at(memory: int) -> float:
        return bottom - memory / y_max * _PLOT_HEIGHT

    parts = [
        f'<rect class="plot" x="{left}" y="{plot_top}" width="{_PLOT_WIDTH}" height="{_PLOT_HEIGHT}" '
        'fill="#fafafa" stroke="#888888"/>'
    ]
    for value in y_ticks:
        y = y_at(value)
        parts.append(
            f'<line class="tick y" data-value="{value}" x1="{left - 5}" y1="{y:.1f}" x2="{right}" '
            f'y2="{y:.1f}" stroke="#e0e0e0"/>'
        )
        parts.append(_text(left - 8, y + 4, format_bytes(value), font_size=11, text_anchor="end"))
    for value in x_ticks:
        x = x_at(value)
        parts.append(
            f'<line class="tick x" data-value="{value}" x1="{x:.1f}" y1="{plot_top}" x2="{x:.1f}" '
            f'y2="{bottom + 5}" stroke="#e0e0e0"/>'
        )
        parts.append(_text(x, bottom + 18, format_flops(value), font_size=11, text_anchor="middle"))
    parts.append(
        _text(
            (left + right) / 2,
            bottom + 38,
            "recompute (FLOPs done again in the backward pass)",
            font_size=12,
            text_anchor="middle",
        )
    )
    middle = (plot_top + bottom) / 2
    parts.append(
        _text(
            18,
            middle,
            axis_title,
            font_size=12,
            text_anchor="middle",
            transform=f"rotate(-90 18 {middle:.1f})",
        )
    )
    if budget is not None:
        y = y_at(budget)
        color = _COLORS["budget"]
        parts.append(
            f'<line class="budget" data-value="{budget}" x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
            f'stroke="{color}" stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
        parts.append(
            _text(
                right - 4,
                y - 5,
                f"budget {format_bytes(budget)}",
                font_size=11,
                fill=color,
                text_anchor="end",
            )
        )

    label_x = right + _LABEL_GAP
    ordered = sorted(groups.values(), key=lambda g: (g.memory, g.flops))
    for group in ordered:
        group.x, group.y = x_at(group.flops), y_at(group.memory)
        group.lines = tuple(
            (i > 0, bool(_marks(p, suggested)), line)
            for p in group.policies
            for i, line in enumerate(_label(p, suggested))
        )
    _place_labels(ordered, plot_top, bottom)
    widest = max((len(line) + 4 * indented for g in ordered for indented, _, line in g.lines), default=0)
    for group in ordered:
        anchor = group.top + _LINE / 2
        parts.append(
            f'<polyline class="leader" points="{group.x:.1f},{group.y:.1f} {label_x - 14:.1f},{anchor:.1f} '
            f'{label_x - 4:.1f},{anchor:.1f}" fill="none" stroke="#b0b0b0"/>'
        )
        figures = f"{format_bytes(group.memory)} · recomputes {format_flops(group.flops)}"
        for policy in sorted(group.policies, key=lambda p: len(_marks(p, suggested))):  # marked on top
            parts.append(_marker(policy, suggested, group.x, group.y, f"{policy.policy}: {figures}"))
        tspans = "".join(
            f'<tspan x="{label_x + 4 * _CHAR * indented:.1f}" dy="{_LINE if i else 0}"'
            + (' font-weight="bold"' if marked else "")
            + f">{escape(line)}</tspan>"
            for i, (indented, marked, line) in enumerate(group.lines)
        )
        parts.append(
            f'<text class="label" x="{label_x:.1f}" y="{anchor + 4:.1f}" font-size="12" '
            f'font-family="{_MONO}">{tspans}</text>'
        )

    label_bottom = max((g.top + len(g.lines) * _LINE for g in ordered), default=bottom)
    y = max(bottom + 64, label_bottom + 20)
    legend = [("candidate", "a candidate"), ("current", "the current policy")]
    if suggested is not None:
        legend.append(("suggested", "suggested for the budget"))
    x = float(left)
    for kind, words in legend:
        parts.append(_shape(kind, x, y - 4))
        parts.append(_text(x + 14, y, words, font_size=12))
        x += 14 + len(words) * 7 + 24
    if budget is not None:
        parts.append(
            f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 24:.1f}" y2="{y - 4:.1f}" '
            f'stroke="{_COLORS["budget"]}" stroke-dasharray="6 4" stroke-width="1.5"/>'
        )
        parts.append(_text(x + 30, y, "the budget", font_size=12))
    for note in undrawn:
        y += 18
        parts.append(_text(left, y, f"Not drawn: {note}", font_size=12))

    width = max(label_x + widest * _CHAR + 16, len(title) * 8.0 + 40)
    height = y + 20
    header = _text(16, 28, title, font_size=15, font_weight="bold")
    return _Svg(
        width,
        height,
        f'<rect width="100%" height="100%" fill="#ffffff"/><g font-family="{_SANS}" fill="#1a1a1a">'
        + header
        + "".join(parts)
        + "</g>",
    )
