"""The advice as a picture: every candidate a point, its memory against its step time where
every drawn candidate's is known (compiled: measured, else predicted), else against its
recompute, the budget a line, the current and the suggested policies marked, and on the step
time axis the trade-off's front (`jax-lsp advise --plot`, the editor's "Compare policies").
Hand-written SVG: no plotting package.

Both axes are linear from zero: nothing_saveable recomputes, and a policy that keeps nothing
keeps 0 bytes, so zero is on both axes, and distances read as the trade-off does (a step 10%
faster is 10% further left). Points
close together are told apart by their labels, laid out in a column beside the plot with a
leader line each; candidates at the same coordinates share one label. Policies are named as the
table names them (`table.py`: abbreviated, ``*`` current, ``+`` suggested), and the chart stays
narrow (at most 600 px) so that a side panel shows it near its size: the title wraps, and so do the
labels and the lines under the legend.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from jax_lsp.trace.advisor import fastest
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.report import heading_facts, site_words
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops
from jax_lsp.trace.advisor.table import (
    Row,
    Suggest,
    abbreviate,
    device_words,
    policy_table,
    short_policy,
    suggested_for,
)

_PLOT_LEFT, _PLOT_WIDTH, _PLOT_HEIGHT = 84, 280, 260
_LABEL_GAP = 30  # from the plot's right edge to the label column
_LINE = 15  # a label line's height
_CHAR = 7.3  # a 12px monospace character's width
_SANS_CHAR = 7.2  # a 12px sans-serif character's width, at most about
_WRAP = 24  # characters of a label line (`_wrap`)
_LEAST_LABELS = 150  # the label column's least width, in pixels
_COLORS = {
    "candidate": "#4c72b0",
    "current": "#dd8452",
    "suggested": "#2ca02c",
    "budget": "#c44e52",
    "front": "#7b4ea3",
}
_DASHES = {"budget": "6 4", "front": "2 3"}  # the lines' dash patterns
_MONO = "ui-monospace, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
_SANS = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif"
_LEGEND = {
    "candidate": "a candidate",
    "current": "* the current policy",
    "suggested": "+ suggested for the budget",
    "budget": "the budget",
    "front": "the front: none faster for as little memory",
}
_NANOSECONDS = 10**9  # the step time axis's unit, per second


def memory_axis(advice: Advice) -> tuple[str, Callable[[PolicyAdvice], int | None]]:
    """The memory axis's title and what a candidate is plotted at on it (None: not drawn): the
    one place that decides which of the advice's memory figures the picture shows."""
    if advice.on_tpu and advice.target is not None:
        return f"compiled peak, one chip of {advice.target.name}", advice.budgeted_bytes
    column = "compiled temp" if advice.compiled else "peak (est.)"
    return f"{column}: the step's temporaries", advice.budgeted_bytes


@dataclass(frozen=True)
class AcrossAxis:
    """The horizontal axis: its title, what a candidate is drawn at (an int: FLOPs, or the step's
    nanoseconds; None: not drawn), a tick's words, a point's figure, the candidates on the
    trade-off's front (their ids)."""

    title: str
    value: Callable[[PolicyAdvice], int | None]
    tick: Callable[[int], str]
    figure: Callable[[int], str]
    front: frozenset[int] = frozenset()


def _step_text(nanoseconds: int) -> str:
    return fastest.seconds_text(nanoseconds / _NANOSECONDS)


def across_axis(advice: Advice) -> AcrossAxis:
    """The step time (the table's `step` where --run measured every fitting candidate's, else
    its `step (est.)`) where every candidate drawn has one, with the front of step time and
    compiled peak (`fastest.pareto_front`); else the recompute."""
    times = {id(p): round(seconds * _NANOSECONDS) for p, seconds, _ in fastest.time_and_peak(advice)}
    _, memory_of = memory_axis(advice)
    drawn = [p for p in advice.policies if _not_drawn(advice, p, memory_of(p)) is None]
    if not drawn or any(id(p) not in times for p in drawn):
        return AcrossAxis(
            "recompute: FLOPs done again in the backward pass",
            lambda p: p.recompute_flops,
            format_flops,
            lambda flops: f"recomputes {format_flops(flops)}",
        )
    if fastest.times_measured(advice):
        title, word = f"step: measured on {device_words(advice)}", "step"
    else:
        word = fastest.estimate_column(advice)
        title = f"{word}: {fastest.timed_how(advice, False)}"
    return AcrossAxis(
        title,
        lambda p: times.get(id(p)),
        _step_text,
        lambda nanoseconds: f"{word} {_step_text(nanoseconds)}",
        frozenset(id(p) for p in fastest.pareto_front(advice)),
    )


def chart_svg(
    advices: Sequence[Advice],
    root: Path | None,
    budget: int | None = None,
    names: bool = True,
    suggest: Suggest = suggested_for,
) -> str:
    """One chart per site, top to bottom, as one SVG document, the candidate ``suggest`` picks
    marked as the table marks it; ``names``: with each abbreviated policy in full under the
    legend (a view that shows the table's legend beside it needs none)."""
    charts = [_chart(advice, root, budget, names, suggest) for advice in advices]
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
    across: int  # the value on the across axis (`AcrossAxis`)
    rows: list[Row]
    on_front: bool = False
    x: float = 0.0
    y: float = 0.0
    lines: tuple[tuple[bool, bool, str], ...] = ()  # (continues the line above, marked, text)
    top: float = 0.0  # where its label block starts


@dataclass(frozen=True)
class _Frame:
    """Where the plot is and how values map onto it."""

    top: float
    x_ticks: list[int]
    y_ticks: list[int]

    @property
    def left(self) -> float:
        return _PLOT_LEFT

    @property
    def right(self) -> float:
        return _PLOT_LEFT + _PLOT_WIDTH

    @property
    def bottom(self) -> float:
        return self.top + _PLOT_HEIGHT

    def x_at(self, across: int) -> float:
        return self.left + across / max(self.x_ticks[-1], 1) * _PLOT_WIDTH

    def y_at(self, memory: int) -> float:
        return self.bottom - memory / max(self.y_ticks[-1], 1) * _PLOT_HEIGHT


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


def _wrap(text: str, width: int = _WRAP) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after a space or an "=" (a
    key's value), and within a word only where it is longer than a line (the lines after the
    first are drawn indented)."""
    lines: list[str] = []
    current = ""
    for piece in re.split(r"(?<= )|(?<==)", text):
        if current and len(current + piece.rstrip()) > width:
            lines.append(current.rstrip())
            current = ""
        while len(current + piece) > width:
            cut = width - len(current)
            lines.append(current + piece[:cut])
            current, piece = "", piece[cut:]
        current += piece
    return [*lines, current.rstrip()]


def _row_label(row: Row) -> list[str]:
    """The row's name as the table abbreviates it, after its mark (``* names(h)``), in lines."""
    return _wrap(f"{row.symbol} {row.short}" if row.symbol else row.short)


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


def _marker(row: Row, x: float, y: float, tip: str, on_front: bool) -> str:
    """The row's point: the suggestion's shape where it is also the current policy."""
    kind = row.marks[-1] if row.marks else "candidate"
    return _shape(kind, x, y, " ".join(["candidate", *(["front"] if on_front else []), *row.marks]), tip)


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


def _not_drawn(advice: Advice, policy: PolicyAdvice, memory: int | None) -> str | None:
    """Why a candidate at ``memory`` is not drawn (whatever the axis across); None: it is."""
    if policy.error is not None:
        return "rejected by JAX"
    if policy.exhausted is not None:
        return "larger than the chip (compiled peak > its memory)"
    if advice.compiled and not policy.was_compiled:
        return "not compiled (the budget's suggestion did not need it)"
    return "no figure on this JAX release" if memory is None else None


def _points(advice: Advice, rows: Sequence[Row], across: AcrossAxis) -> tuple[list[_Group], list[str]]:
    """The candidates drawn, grouped by their coordinates, and a line per reason the others are
    not: ``Not drawn, rejected by JAX: broken, names(h)``."""
    _, memory_of = memory_axis(advice)
    groups: dict[tuple[int, int], _Group] = {}
    undrawn: dict[str, list[str]] = {}
    for policy, row in zip(advice.policies, rows):
        memory, value = memory_of(policy), across.value(policy)
        why = _not_drawn(advice, policy, memory)
        if why is None and memory is not None and value is not None:
            group = groups.setdefault((memory, value), _Group(memory, value, []))
            group.rows.append(row)
            group.on_front = group.on_front or id(policy) in across.front
            continue
        undrawn.setdefault(why or "no figure on this JAX release", []).append(row.short)
    lines = [f"Not drawn, {why}: {', '.join(names)}" for why, names in undrawn.items()]
    return sorted(groups.values(), key=lambda g: (g.memory, g.across)), lines


def _axes(frame: _Frame, axis_title: str, across: AcrossAxis) -> list[str]:
    """The plot's box, its ticks with their values, and the axes' titles."""
    left, right, top, bottom = frame.left, frame.right, frame.top, frame.bottom
    parts = [
        f'<rect class="plot" x="{left}" y="{top}" width="{_PLOT_WIDTH}" height="{_PLOT_HEIGHT}" '
        'fill="#fafafa" stroke="#888888"/>'
    ]
    for value in frame.y_ticks:
        y = frame.y_at(value)
        parts.append(
            f'<line class="tick y" data-value="{value}" x1="{left - 5}" y1="{y:.1f}" x2="{right}" '
            f'y2="{y:.1f}" stroke="#e0e0e0"/>'
        )
        parts.append(_text(left - 8, y + 4, format_bytes(value), font_size=11, text_anchor="end"))
    for value in frame.x_ticks:
        x = frame.x_at(value)
        parts.append(
            f'<line class="tick x" data-value="{value}" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" '
            f'y2="{bottom + 5}" stroke="#e0e0e0"/>'
        )
        parts.append(_text(x, bottom + 18, across.tick(value), font_size=11, text_anchor="middle"))
    parts.append(_text((left + right) / 2, bottom + 38, across.title, font_size=12, text_anchor="middle"))
    middle = (top + bottom) / 2
    turned = f"rotate(-90 16 {middle:.1f})"
    parts.append(_text(16, middle, axis_title, font_size=12, text_anchor="middle", transform=turned))
    return parts


def _budget_line(frame: _Frame, budget: int) -> list[str]:
    y, color = frame.y_at(budget), _COLORS["budget"]
    return [
        f'<line class="budget" data-value="{budget}" x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" '
        f'y2="{y:.1f}" stroke="{color}" stroke-width="1.5" stroke-dasharray="{_DASHES["budget"]}"/>',
        _text(
            frame.right - 4,
            y - 5,
            f"budget {format_bytes(budget)}",
            font_size=11,
            fill=color,
            text_anchor="end",
        ),
    ]


def _front_line(frame: _Frame, groups: list[_Group]) -> list[str]:
    """The trade-off's front: a line through the points no other beats on both step time and
    memory, smallest memory first (none where fewer than two are on it)."""
    points = [g for g in groups if g.on_front]
    if len(points) < 2:
        return []
    path = " ".join(f"{frame.x_at(g.across):.1f},{frame.y_at(g.memory):.1f}" for g in points)
    return [
        f'<polyline class="front" points="{path}" fill="none" stroke="{_COLORS["front"]}" '
        f'stroke-width="1.5" stroke-dasharray="{_DASHES["front"]}"/>'
    ]


def _labelled_points(frame: _Frame, groups: list[_Group], across: AcrossAxis) -> list[str]:
    """Each group's markers, its label in the column beside the plot and the line joining them."""
    label_x = frame.right + _LABEL_GAP
    for group in groups:
        group.x, group.y = frame.x_at(group.across), frame.y_at(group.memory)
        group.lines = tuple(_group_lines(group))
    _place_labels(groups, frame.top, frame.bottom)
    parts = []
    for group in groups:
        anchor = group.top + _LINE / 2
        parts.append(
            f'<polyline class="leader" points="{group.x:.1f},{group.y:.1f} {label_x - 14:.1f},{anchor:.1f} '
            f'{label_x - 4:.1f},{anchor:.1f}" fill="none" stroke="#b0b0b0"/>'
        )
        figures = f"{format_bytes(group.memory)} · {across.figure(group.across)}"
        for row in sorted(group.rows, key=lambda r: bool(r.mark)):  # marked on top
            parts.append(_marker(row, group.x, group.y, f"{row.policy}: {figures}", group.on_front))
        tspans = "".join(
            f'<tspan x="{label_x + 2 * _CHAR * indented:.1f}" dy="{_LINE if i else 0}"'
            + (' font-weight="bold"' if marked else "")
            + f">{escape(line)}</tspan>"
            for i, (indented, marked, line) in enumerate(group.lines)
        )
        parts.append(
            f'<text class="label" x="{label_x:.1f}" y="{anchor + 4:.1f}" font-size="12" '
            f'font-family="{_MONO}">{tspans}</text>'
        )
    return parts


def _legend(y: float, width: float, kinds: list[str]) -> tuple[list[str], float]:
    """The meanings of the markers and lines of ``kinds`` (`_LEGEND`), wrapped to ``width``;
    where it ends."""
    parts, x = [], float(_PLOT_LEFT)
    for kind in kinds:
        words = _LEGEND[kind]
        wide = 30 + len(words) * _SANS_CHAR
        if x > _PLOT_LEFT and x + wide > width:
            x, y = float(_PLOT_LEFT), y + 20
        if kind in _DASHES:
            parts.append(
                f'<line x1="{x - 8:.1f}" y1="{y - 4:.1f}" x2="{x + 16:.1f}" y2="{y - 4:.1f}" '
                f'stroke="{_COLORS[kind]}" stroke-dasharray="{_DASHES[kind]}" stroke-width="1.5"/>'
            )
            parts.append(_text(x + 22, y, words, font_size=12))
        else:
            parts.append(_shape(kind, x, y - 4))
            parts.append(_text(x + 14, y, words, font_size=12))
        x += wide
    return parts, y


def _lines_under(
    y: float, width: float, lines: list[str], left: float = _PLOT_LEFT
) -> tuple[list[str], float]:
    """``lines`` from ``left``, each wrapped to ``width`` (the later lines of one indented); where
    they end."""
    parts = []
    for line in lines:
        for i, piece in enumerate(
            textwrap.wrap(line, int((width - left) / _SANS_CHAR), break_on_hyphens=False)
        ):
            y += 17
            parts.append(_text(left + (12 if i else 0), y, piece, font_size=12))
    return parts, y


def _title(width: float, advice: Advice, root: Path | None) -> tuple[list[str], float]:
    """``Remat policies at mlp.py:14`` and, under it, what the figures are for, wrapped."""
    parts = [_text(16, 28, f"Remat policies at {site_words(advice, root)}", font_size=15, font_weight="bold")]
    y = 28.0
    for line in textwrap.wrap(heading_facts(advice), int((width - 32) / _SANS_CHAR)):
        y += 18
        parts.append(_text(16, y, line, font_size=12))
    return parts, y


def _not_advised(advice: Advice, root: Path | None) -> _Svg:
    width = 560.0
    title, y = _title(width, advice, root)
    lines, y = _lines_under(y + 8, width, [f"Not advised: {advice.message}"], left=16)
    body = "".join(title + lines)
    return _Svg(
        width,
        y + 20,
        f'<rect width="100%" height="100%" fill="#ffffff"/><g font-family="{_SANS}" fill="#1a1a1a">{body}</g>',
    )


def _chart(advice: Advice, root: Path | None, budget: int | None, names: bool, suggest: Suggest) -> _Svg:
    if not advice.ok:
        return _not_advised(advice, root)
    table = policy_table(advice, budget, suggest)
    across = across_axis(advice)
    groups, undrawn = _points(advice, table.rows, across)
    widest = max(
        (len(line) + 2 * indented for g in groups for indented, _, line in _group_lines(g)), default=0
    )
    width = _PLOT_LEFT + _PLOT_WIDTH + _LABEL_GAP + max(widest * _CHAR, _LEAST_LABELS) + 16
    title, title_bottom = _title(width, advice, root)
    top_memory = max([g.memory for g in groups] + [budget or 0])
    top_across = max((g.across for g in groups), default=0)
    frame = _Frame(title_bottom + 28, _ticks(top_across, 1), _ticks(top_memory, _byte_unit(top_memory)))
    axis_title, _ = memory_axis(advice)
    parts = title + _axes(frame, axis_title, across)
    parts += _budget_line(frame, budget) if budget is not None else []
    front = _front_line(frame, groups)
    parts += front + _labelled_points(frame, groups, across)
    label_bottom = max((g.top + len(g.lines) * _LINE for g in groups), default=frame.bottom)
    drawn = [row for group in groups for row in group.rows]
    marks = [m for m in ("current", "suggested") if any(m in r.marks for r in drawn)]
    lines = (["budget"] if budget else []) + (["front"] if front else [])
    legend, y = _legend(max(frame.bottom + 64, label_bottom + 20), width, ["candidate", *marks, *lines])
    spelled = _spelled(advice) if names else []
    under, y = _lines_under(y, width, undrawn + spelled)
    body = "".join(legend + under)
    return _Svg(
        width,
        y + 20,
        f'<rect width="100%" height="100%" fill="#ffffff"/><g font-family="{_SANS}" fill="#1a1a1a">'
        + "".join(parts)
        + body
        + "</g>",
    )


def _spelled(advice: Advice) -> list[str]:
    """``dots = dots_saveable``: each abbreviation the chart uses, in full, once."""
    pairs = dict.fromkeys((abbreviate(p.policy), short_policy(p.policy)) for p in advice.policies)
    return [f"{short} = {full}" for short, full in pairs if short != full]


def _group_lines(group: _Group) -> list[tuple[bool, bool, str]]:
    return [(i > 0, bool(row.mark), line) for row in group.rows for i, line in enumerate(_row_label(row))]
