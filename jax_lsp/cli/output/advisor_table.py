"""`jax-lsp advise`'s report of one site, as a plain-text table (the Markdown one is
`trace.advisor.report.format_markdown`)."""

from __future__ import annotations

from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice, format_bytes, grouped, relative
from jax_lsp.trace.advisor.report import (
    NO_EFFECT_HEADING,
    columns,
    compile_failures,
    heading,
    legend,
    no_effect_lines,
    no_fit,
    policy_rows,
    rejections,
    residual_line,
    run_note,
    suggestion,
)


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
    rows = [header, *policy_rows(advice, suggested)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [row[i].rjust(widths[i]) for i in range(2, len(header))]
        lines.append("  ".join(cells).rstrip())
    lines.append("(* current policy" + (", + suggested" if suggested else "") + f")\n({legend(advice)})")
    lines += [f"Note: {note}." for note in advice.notes]
    ran = run_note(advice)
    if ran:
        lines.append(f"{ran}.")
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
        lines.append(f"The current policy keeps ({current.summary()}):")
        lines += [f"  {residual_line(r, root, count)}" for r, count in grouped(current.residuals)]
    if budget is not None:
        lines.append("")
        if suggested is None:
            lines.append(no_fit(advice, budget))
        else:
            lines.append(f"Suggested for a budget of {format_bytes(budget)} ({suggested.summary()}):")
            action, detail = suggestion(advice, suggested, root)
            lines.append(f"  {action}" + (f" ({detail})" if detail else ""))
    return "\n".join(lines)
