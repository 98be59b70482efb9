"""`jax-lsp advise`'s report of one site as plain text: the table every view renders
(`trace.advisor.table`) in fixed-width columns, then what the current policy keeps and the
suggestion (the Markdown one is `trace.advisor.report.format_markdown`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.report import (
    NO_EFFECT_HEADING,
    compile_failures,
    fit_check_line,
    heading,
    no_effect_lines,
    no_fit,
    notes,
    passed_over,
    policy_summary,
    rejections,
    slower_words,
    suggestion,
)
from jax_lsp.trace.advisor.residual_list import SHOWN, residual_rows
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.advisor.table import Row, Table, policy_table, short_policy

TABLE_WIDTH = 120  # characters a row may take; longer policies are abbreviated, with a legend
_LEAST_POLICY_WIDTH = 40  # a ready-made policy, save_only_these_names of two names


def _names(table: Table) -> list[str]:
    """Each row's policy as the table shows it: its full name, or its abbreviation where the full
    one would make a row wider than `TABLE_WIDTH` (the column gets at least `_LEAST_POLICY_WIDTH`)."""
    widths = [
        max(len(word), *(len(row.cells[i]) for row in table.rows)) for i, word in enumerate(table.words)
    ]
    room = max(TABLE_WIDTH - 1 - sum(widths) - 2 * (len(widths) + 1), _LEAST_POLICY_WIDTH)
    return [row.name if len(row.name) <= room else row.short for row in table.rows]


def _table_lines(table: Table) -> list[str]:
    """The header, a row per candidate and, under them, the marks, the legend and the
    abbreviated policies in full."""
    names = _names(table)
    grid = [("", "policy", *table.words)] + [
        (row.symbol, name, *row.cells) for row, name in zip(table.rows, names)
    ]
    widths = [max(len(line[i]) for line in grid) for i in range(len(grid[0]))]
    lines = [
        "  ".join(
            [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
            + [c.rjust(w) for c, w in zip(line[2:], widths[2:])]
        ).rstrip()
        for line in grid
    ]
    marks = table.marks()
    lines += ([f"({marks})"] if marks else []) + textwrap.wrap(f"({'; '.join(table.legend())})", TABLE_WIDTH)
    shortened: list[Row] = [row for row, name in zip(table.rows, names) if name != row.name]
    lines += [f"{row.short}: {row.name}" for row in shortened]
    return lines


def _no_effect_block(advice: Advice, root: Path | None) -> list[str]:
    no_effect = no_effect_lines(advice, root)
    return [f"{NO_EFFECT_HEADING}:", *(f"  {line}" for line in no_effect)] if no_effect else []


def _kept_lines(advice: Advice, root: Path | None, residuals: int | None) -> list[str]:
    """What the current policy keeps, by the line that made it, largest first (`residual_list`)."""
    current = advice.current
    if current is None or not current.residuals:
        return []
    kept, rest = residual_rows(current.residuals, root, residuals)
    where_width = max(len(where) for where, _, _ in kept)
    size_width = max(len(size) for _, size, _ in kept)
    lines = ["", f"The current policy keeps ({policy_summary(current)}), by the line that made it:"]
    lines += [f"  {where.ljust(where_width)}  {size.rjust(size_width)}  {what}" for where, size, what in kept]
    return lines + ([f"  {rest} (--residuals all lists them)"] if rest else [])


def advice_table(
    advice: Advice, root: Path | None, budget: int | None = None, residuals: int | None = SHOWN
) -> str:
    """The advice as plain text: one row per policy, then what the current policy keeps (the
    largest ``residuals`` groups; None: every one) and the suggestion for ``budget``."""
    lines = [f"== {heading(advice, root)}"]
    if not advice.ok:
        where = f"{relative(advice.error_path, root)}:{advice.error_line}: " if advice.error_line else ""
        lines.append(f"{where}{advice.message}")
        lines += _no_effect_block(advice, root)
        return "\n".join(lines)
    table = policy_table(advice, budget)
    lines += _table_lines(table)
    lines += [f"{note}." for note in notes(advice, short_policy)]
    checked = fit_check_line(advice)
    lines += [checked] if checked else []
    for title, found in (
        ("Rejected by JAX", rejections(advice)),
        ("Did not compile", compile_failures(advice)),
    ):
        lines += [f"{title}:", *(f"  {line}" for line in found)] if found else []
    lines += _no_effect_block(advice, root)
    lines += _kept_lines(advice, root, residuals)
    if budget is not None:
        lines.append("")
        suggested = table.suggested
        if suggested is None:
            lines.append(no_fit(advice, budget))
        else:
            lines.append(f"Suggested for a budget of {format_bytes(budget)} ({policy_summary(suggested)}):")
            action, detail = suggestion(advice, suggested, root)
            lines.append(f"  {action}" + (f" ({detail})" if detail else ""))
            slower = passed_over(advice, budget)
            lines += [f"  (chosen by the measured step times: {slower_words(slower)})"] if slower else []
    return "\n".join(lines)
