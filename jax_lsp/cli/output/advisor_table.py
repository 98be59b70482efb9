"""`jax-lsp advise`'s report of one site, as a plain-text table (the Markdown one is
`trace.advisor.report.format_markdown`)."""

from __future__ import annotations

from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice, grouped, relative
from jax_lsp.trace.advisor.fastest import fastest_line, uncounted_note
from jax_lsp.trace.advisor.report import (
    NO_EFFECT_HEADING,
    columns,
    compile_failures,
    fit_check_line,
    heading,
    legend,
    no_effect_lines,
    no_fit,
    passed_over,
    policy_rows,
    policy_summary,
    rejections,
    residual_line,
    run_note,
    short_policy,
    slower_words,
    suggestion,
)
from jax_lsp.trace.advisor.sizes import format_bytes

TABLE_WIDTH = 120  # characters a row may take; longer policies are shortened, with a legend
_LEAST_POLICY_WIDTH = 40  # a ready-made policy, save_only_these_names of two names


def _shortened(label: str, room: int, number: int) -> str | None:
    """``save_and_offload_only_these_names(…) [1]``: a call without its arguments, and the number
    of its line in the legend, cut to ``room`` where even that is longer; None for a label that
    is not a call (a policy's name, with the key that selects it: kept whole)."""
    call = label.find("(")
    if call <= 0 or not (label[call - 1].isalnum() or label[call - 1] == "_"):
        return None
    tag = f" [{number}]"
    short = label[: call + 1] + "…)"
    if len(short) + len(tag) > room:
        short = short[: max(room - len(tag) - 1, 1)] + "…"
    return short + tag


def _fitted(rows: list[tuple[str, ...]]) -> tuple[list[tuple[str, ...]], list[str]]:
    """``rows`` (the header first) with each policy too long for a row of `TABLE_WIDTH`
    shortened (`_shortened`), and the shortened policies in full, in the order of their numbers."""
    others = sum(max(len(row[i]) for row in rows) for i in (0, *range(2, len(rows[0])))) + 2 * (
        len(rows[0]) - 1
    )
    room = max(TABLE_WIDTH - others, _LEAST_POLICY_WIDTH)
    shortened: list[str] = []
    fitted = [rows[0]]
    for mark, label, *cells in rows[1:]:
        short = _shortened(label, room, len(shortened) + 1) if len(label) > room else None
        if short is not None:
            shortened.append(label)
            label = short
        fitted.append((mark, label, *cells))
    return fitted, shortened


def _no_effect_block(advice: Advice, root: Path | None) -> list[str]:
    no_effect = no_effect_lines(advice, root)
    return [f"{NO_EFFECT_HEADING}:", *(f"  {line}" for line in no_effect)] if no_effect else []


def advice_table(advice: Advice, root: Path | None, budget: int | None = None) -> str:
    """The advice as plain text: one row per policy, then what the current policy keeps."""
    lines = [f"== {heading(advice, root)}"]
    if not advice.ok:
        where = f"{relative(advice.error_path, root)}:{advice.error_line}: " if advice.error_line else ""
        lines.append(f"{where}{advice.message}")
        lines += _no_effect_block(advice, root)
        return "\n".join(lines)
    suggested = advice.suggest(budget) if budget is not None else None
    header = ("", "policy", *columns(advice))
    rows, shortened = _fitted([header, *policy_rows(advice, suggested)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [row[i].rjust(widths[i]) for i in range(2, len(header))]
        lines.append("  ".join(cells).rstrip())
    lines.append("(* current policy" + (", + suggested" if suggested else "") + f")\n({legend(advice)})")
    lines += [f"[{number}] {label}" for number, label in enumerate(shortened, 1)]
    quickest = fastest_line(advice, short_policy)
    lines += [f"{quickest}."] if quickest else []
    uncounted = uncounted_note(advice, short_policy)
    lines += [f"Note: {uncounted}."] if uncounted else []
    lines += [f"Note: {note}." for note in advice.notes]
    ran = run_note(advice)
    if ran:
        lines.append(f"{ran}.")
    checked = fit_check_line(advice)
    lines += [checked] if checked else []
    rejected = rejections(advice)
    if rejected:
        lines.append("Rejected by JAX:")
        lines += [f"  {line}" for line in rejected]
    failed = compile_failures(advice)
    if failed:
        lines.append("Did not compile:")
        lines += [f"  {line}" for line in failed]
    lines += _no_effect_block(advice, root)
    current = advice.current
    if current is not None and current.residuals:
        lines.append("")
        lines.append(f"The current policy keeps ({policy_summary(current)}):")
        lines += [f"  {residual_line(r, root, count)}" for r, count in grouped(current.residuals)]
    if budget is not None:
        lines.append("")
        if suggested is None:
            lines.append(no_fit(advice, budget))
        else:
            lines.append(f"Suggested for a budget of {format_bytes(budget)} ({policy_summary(suggested)}):")
            action, detail = suggestion(advice, suggested, root)
            lines.append(f"  {action}" + (f" ({detail})" if detail else ""))
            slower = passed_over(advice, budget)
            lines += [f"  (chosen by the measured step times: {slower_words(slower)})"] if slower else []
    return "\n".join(lines)
