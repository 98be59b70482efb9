"""The editor's "Compare policies", laid out once for every client from the one table model
(`table.py`): a row per candidate under its abbreviated name (with the key that selects it), the
legend giving each in full, the columns with their words, abbreviations and meanings. VS Code's
panel renders `comparison_view` as HTML; Neovim's scratch buffer shows `comparison_text`, the same
view in fixed-width text that fits 80 columns where it can (abbreviating the headers where the
words do not fit).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.report import figures_for, no_fit, notes, passed_over, site_words, slower_words
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.advisor.table import (
    MARKS,
    Suggest,
    Table,
    abbreviate,
    policy_table,
    suggested_for,
    target_words,
)

BUDGET_HINT = "no suggestion: set the advise.budget setting (e.g. 24GiB) to get one"
WIDTH = 80
_LEAST_LABEL = 22  # characters a wrapped policy keeps on a line: its mark and most abbreviations


def _budget_line(advice: Advice, budget: int | None, suggested: PolicyAdvice | None) -> str:
    if budget is None:
        return BUDGET_HINT
    if suggested is None:
        return no_fit(advice, budget)
    measure = "compiled peak" if advice.on_tpu else "compiled temp" if advice.compiled else "peak (est.)"
    text = f"suggested for a budget of {format_bytes(budget)}, by {measure}"
    slower = passed_over(advice, budget)
    return f"{text}; {slower_words(slower, abbreviate)}" if slower is not None else text


def _notes(advice: Advice, table: Table) -> list[str]:
    """What the marks and each column shown mean, then the sentences every view says under its
    table (`report.notes`), policies abbreviated."""
    marks = table.marks()
    return [*([marks] if marks else []), *table.legend(), *notes(advice, abbreviate)]


def comparison_view(
    advice: Advice, root: Path | None, budget: int | None, suggest: Suggest = suggested_for
) -> dict[str, Any]:
    """The comparison as JSON (`jax-lsp.comparePolicies`' ``view``, docs/advise.md): ``title``,
    ``facts``, ``budget`` (what was suggested for it), ``columns`` (the headers' words, after the
    policy's) and ``headers`` (``word``, ``short``, ``unit``, ``meaning`` of each), ``rows``
    (``mark``, ``label``: the abbreviated name, ``name``: in full, ``policy``, ``cells``),
    ``legend`` (``label``, ``policy``, ``error``), ``notes``; an advice that failed has ``message``
    and no rows. The row marked suggested is the one ``suggest`` picks (the editor: what its quick
    fix offers)."""
    facts = [figures_for(advice)]
    if advice.on_tpu:
        facts.append(f"compiled for {target_words(advice)}")
    view: dict[str, Any] = {
        "title": site_words(advice, root),
        "facts": " · ".join(f for f in facts if f) or "no JAX",
        "columns": [],
        "headers": [],
        "rows": [],
        "legend": [],
        "notes": [],
    }
    if not advice.ok:
        return {**view, "message": advice.message}
    table = policy_table(advice, budget, suggest)
    view.update(
        budget=_budget_line(advice, budget, suggested_for(advice, budget)),
        columns=list(table.words),
        headers=[
            {"word": h.word, "short": h.short, "unit": h.unit, "meaning": h.meaning} for h in table.headers
        ],
        rows=[
            {"mark": r.mark, "label": r.short, "name": r.name, "policy": r.policy, "cells": list(r.cells)}
            for r in table.rows
        ],
        legend=[{"label": r.short, "policy": r.policy, "error": r.error} for r in table.rows],
        notes=_notes(advice, table),
    )
    return view


def comparison_text(view: dict[str, Any], width: int = WIDTH) -> str:
    """``view`` as fixed-width text (Neovim's Compare buffer): a heading, the table with each
    header on two lines (abbreviated where the words make it wider than ``width``), the notes and
    the legend, within ``width`` columns where the table fits."""
    lines = [f"Compare policies: {view['title']}", view["facts"]]
    if "message" in view:
        return "\n".join([*lines, "", view["message"]]) + "\n"
    lines.append(view["budget"])
    table = [[f"{MARKS.get(r['mark'], ' ')} {r['label']}", *r["cells"]] for r in view["rows"]]
    words = [h["word"] for h in view["headers"]]
    shorts = [h["short"] for h in view["headers"]]
    grid = _grid(words, table, width)
    if _width(grid) > width and shorts != words:
        grid = _grid(shorts, table, width)
        lines.append("Abbreviated: " + ", ".join(f"{s} = {w}" for s, w in zip(shorts, words) if s != w))
    lines += ["", *grid, ""]
    for note in view["notes"]:
        lines += textwrap.wrap(note, width, subsequent_indent="  ")
    lines += ["", "Legend:"]
    label_width = max((len(entry["label"]) for entry in view["legend"]), default=0)
    for entry in view["legend"]:
        full = entry["policy"] + (f" (rejected by JAX: {entry['error']})" if entry["error"] else "")
        parts = textwrap.wrap(full, width - label_width - 4, break_long_words=False, break_on_hyphens=False)
        lines.append(f"  {entry['label'].ljust(label_width)}  {parts[0] if parts else ''}")
        lines += [" " * (label_width + 4) + part for part in parts[1:]]
    return "\n".join(lines) + "\n"


def _grid(headers: list[str], table: list[list[str]], width: int = WIDTH) -> list[str]:
    """The table's lines: each header on two lines, the policy left (wrapped at its spaces onto
    lines of its own where the row would be wider than ``width``), the figures right, two spaces
    between columns (one where that fits and two do not)."""
    heads = [_two_lines("policy"), *(_two_lines(h) for h in headers)]
    widths = [max(len(text) for text in [*head, *(row[i] for row in table)]) for i, head in enumerate(heads)]
    gap = "  " if sum(widths) + 2 * (len(widths) - 1) <= width else " "
    room = max(width - sum(widths[1:]) - len(gap) * (len(widths) - 1), _LEAST_LABEL)
    widths[0] = min(widths[0], room)

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return gap.join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]).rstrip()

    lines = [line([h[0] for h in heads]), line([h[1] for h in heads])]
    for row in table:
        first, *rest = textwrap.wrap(row[0], widths[0], subsequent_indent="    ", break_long_words=False)
        lines += [line([first, *row[1:]]), *rest]
    return lines


def _width(grid: list[str]) -> int:
    return max(len(line) for line in grid)


def _two_lines(header: str) -> tuple[str, str]:
    """``("peak", "(est.)")``: a header split at its first space, to keep its column narrow."""
    first, _, rest = header.partition(" ")
    return (first, rest) if rest else ("", first)
