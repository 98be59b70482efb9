"""The editor's "Compare policies", laid out once for every client: a row per candidate under
an abbreviated name (`abbreviate`, with a legend giving each in full), the columns that matter,
the compiled and measured figures where they exist, and what each column means. VS Code's panel
renders `comparison_view` as HTML; Neovim's scratch buffer shows `comparison_text`, the same view
in fixed-width text that fits 80 columns where it can.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from jax_lsp.trace.advisor import fastest, runs
from jax_lsp.trace.advisor.advice import Advice, PolicyAdvice, relative
from jax_lsp.trace.advisor.report import (
    compiled_cell,
    figures_for,
    fit_cells,
    fit_column,
    no_fit,
    passed_over,
    run_note,
    slower_words,
    steps_ran,
    target_words,
)
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops

PREFIX = "jax.checkpoint_policies."
SHORT = {
    "nothing_saveable": "nothing",
    "everything_saveable": "everything",
    "dots_saveable": "dots",
    "checkpoint_dots": "dots",
    "dots_with_no_batch_dims_saveable": "dots, no batch",
    "checkpoint_dots_with_no_batch_dims": "dots, no batch",
    "save_only_these_names": "names",
    "save_and_offload_only_these_names": "offload names",
    "offload_dot_with_no_batch_dims": "offload dots",
    "save_anything_except_these_names": "all but names",
    "save_any_names_but_these": "names but",
    "save_from_both_policies": "both",
}
MAX_LABEL = 24
_MEMORIES = ("device", "pinned_host", "unpinned_host")  # an offload's source and target, not names
BUDGET_HINT = "no suggestion: set the advise.budget setting (e.g. 24GiB) to get one"
MARKS = {"current": "*", "suggested": "+"}
WIDTH = 80


def abbreviate(policy: str) -> str:
    """A short name for a policy expression: ``names(h, y)``, ``offload dots``, ``dots``."""
    text = policy.removeprefix(PREFIX)
    call = re.match(r"^([A-Za-z_][\w.]*)\(([\s\S]*)\)$", text)
    name = call[1] if call else text
    label = SHORT.get(name.removeprefix(PREFIX), name.rpartition(".")[2])
    if call and "names" in name:
        names = [n for n in re.findall(r"['\"]([^'\"]*)['\"]", call[2]) if n not in _MEMORIES]
        label += f"({', '.join(names)})"
    return label[: MAX_LABEL - 1] + "…" if len(label) > MAX_LABEL else label


def labels(policies: list[str]) -> list[str]:
    """Each policy's label, unique (a second ``dots`` is ``dots #2``)."""
    seen: dict[str, int] = {}
    found = []
    for policy in policies:
        label = abbreviate(policy)
        seen[label] = seen.get(label, 0) + 1
        found.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return found


def _columns(advice: Advice) -> list[str]:
    """saves, computed, the peak as estimated (and compiled), recompute, host traffic; the step's
    time where the steps ran, and its peak in use where the device counts it."""
    shown = ["saves", "computed", "peak (est.)"]
    if advice.compiled:
        shown += ["compiled peak", fit_column(advice)] if advice.on_tpu else ["compiled temp"]
    shown += ["recompute", "host ⇄"]
    if fastest.estimated(advice):
        shown.append(fastest.estimate_column(advice))
    if steps_ran(advice):
        shown.append("step")
        if any(runs.peak_in_use_text(p.run) != "?" for p in advice.policies):
            shown.append("peak in use")
    return shown


def _size(count: int | None) -> str:
    return "?" if count is None else format_bytes(count)


def _cells(advice: Advice, policy: PolicyAdvice, columns: list[str]) -> list[str]:
    if policy.error is not None:
        return ["failed", *("" for _ in columns[1:])]
    cells = [str(len(policy.residuals)), _size(policy.computed_bytes), _size(policy.peak_bytes)]
    if advice.compiled:
        cells += fit_cells(advice, policy) if advice.on_tpu else [compiled_cell(policy)]
    cells += [
        format_flops(policy.recompute_flops),
        format_bytes(policy.host_bytes) if policy.host_bytes else "0",
    ]
    if fastest.estimate_column(advice) in columns:
        cells.append(fastest.estimate_cell(advice, policy))
    if "step" in columns:
        cells.append(runs.step_text(policy.run))
    if "peak in use" in columns:
        cells.append(runs.peak_in_use_text(policy.run))
    return cells


def _budget_line(advice: Advice, budget: int | None, suggested: PolicyAdvice | None) -> str:
    if budget is None:
        return BUDGET_HINT
    if suggested is None:
        return no_fit(advice, budget)
    measure = "compiled peak" if advice.on_tpu else "compiled temp" if advice.compiled else "peak, est."
    text = f"suggested for a budget of {format_bytes(budget)} ({measure})"
    slower = passed_over(advice, budget)
    return f"{text}; {slower_words(slower, abbreviate)}" if slower is not None else text


def _device(advice: Advice) -> str:
    """``TPU v5 lite (tpu)``: where the steps ran."""
    ran = advice.run
    if ran is None or not ran.device:
        return "the device"
    return ran.device if ran.device == ran.platform else f"{ran.device} ({ran.platform})"


def _notes(advice: Advice, columns: list[str]) -> list[str]:
    """What the marks and each column shown mean, and where the steps ran."""
    held = next((p.argument_bytes for p in advice.policies if p.error is None), None)
    meaning = {
        "computed": "what the policy keeps on the device; the step also holds "
        f"{_size(held)} of arguments whatever the policy",
        "peak (est.)": "the step's temporary device memory at its peak, estimated from its trace",
        "compiled temp": "XLA's temporaries for the compiled step (memory_analysis)",
        "compiled peak": "all the step holds at once on one chip (XLA's peak_memory_in_bytes), compiled for "
        + target_words(advice),
        "host ⇄": "what an offloading policy moves to the host in the forward pass, and back in the "
        "backward pass, every step",
        "step": "the compiled step's median time on "
        + (
            f"{advice.run.device} ({advice.run.platform})"
            if advice.run and advice.run.device
            else "the device"
        )
        + ", on random inputs",
        "peak in use": "the device's peak_bytes_in_use, the step's own where it raised the high-water "
        "mark (smallest compiled peak ran first), else ≤ the mark; on a TPU, buffers only, not XLA's "
        "temporaries",
    }
    if fastest.estimated(advice):
        meaning[fastest.estimate_column(advice)] = fastest.estimate_legend(advice).split(": ", 1)[1]
    notes = ["* current policy, + suggested"]
    notes += [f"{column}: {meaning[column]}" for column in columns if column in meaning]
    quickest = fastest.fastest_line(advice, abbreviate)
    uncounted = fastest.uncounted_note(advice, abbreviate)
    notes += [text for text in (quickest, uncounted and f"Note: {uncounted}") if text]
    ran = run_note(advice)
    return notes + ([ran] if ran else []) + [f"Note: {note}" for note in advice.notes]


def comparison_view(advice: Advice, root: Path | None, budget: int | None) -> dict[str, Any]:
    """The comparison as JSON (`jax-lsp.comparePolicies`' ``view``, docs/advise.md): ``title``,
    ``facts``, ``budget`` (what was suggested for it), ``columns`` (after the policy's), ``rows``
    (``mark``, ``label``, ``policy``, ``cells``), ``legend`` (``label``, ``policy``, ``error``),
    ``notes``; an advice that failed has ``message`` and no rows."""
    facts = [figures_for(advice)]
    if advice.on_tpu:
        facts.append(f"compiled for {target_words(advice)}")
    view: dict[str, Any] = {
        "title": f"{relative(advice.path, root)}:{advice.line}",
        "facts": " · ".join(f for f in facts if f) or "no JAX",
        "columns": [],
        "rows": [],
        "legend": [],
        "notes": [],
    }
    if not advice.ok:
        return {**view, "message": advice.message}
    suggested = advice.suggest(budget) if budget is not None else None
    columns = _columns(advice)
    names = labels([p.policy for p in advice.policies])
    rows, legend = [], []
    for policy, label in zip(advice.policies, names):
        mark = "current" if policy.current else "suggested" if policy is suggested else ""
        cells = _cells(advice, policy, columns)
        rows.append({"mark": mark, "label": label, "policy": policy.policy, "cells": cells})
        error = (
            policy.error.strip().splitlines()[0] if policy.error and policy.error.strip() else policy.error
        )
        legend.append({"label": label, "policy": policy.policy, "error": error})
    view.update(
        budget=_budget_line(advice, budget, suggested),
        columns=columns,
        rows=rows,
        legend=legend,
        notes=_notes(advice, columns),
    )
    return view


def comparison_text(view: dict[str, Any], width: int = WIDTH) -> str:
    """``view`` as fixed-width text (Neovim's Compare buffer): a heading, the table with each
    header on two lines, the notes and the legend, within ``width`` columns where the table fits."""
    lines = [f"Compare policies: {view['title']}", view["facts"]]
    if "message" in view:
        return "\n".join([*lines, "", view["message"]]) + "\n"
    lines.append(view["budget"])
    headers = [_two_lines("policy"), *(_two_lines(c) for c in view["columns"])]
    table = [[f"{MARKS.get(r['mark'], ' ')} {r['label']}", *r["cells"]] for r in view["rows"]]
    widths = [
        max(len(text) for text in [*header, *(row[i] for row in table)]) for i, header in enumerate(headers)
    ]
    gap = "  " if sum(widths) + 2 * (len(widths) - 1) <= width else " "

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return gap.join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]).rstrip()

    lines += ["", line([h[0] for h in headers]), line([h[1] for h in headers])]
    lines += [line(row) for row in table]
    lines.append("")
    for note in view["notes"]:
        lines += textwrap.wrap(note, width, subsequent_indent="  ")
    lines += ["", "Legend:"]
    label_width = max((len(entry["label"]) for entry in view["legend"]), default=0)
    for entry in view["legend"]:
        full = entry["policy"] + (f" (failed: {entry['error']})" if entry["error"] else "")
        parts = textwrap.wrap(full, width - label_width - 4, break_long_words=False, break_on_hyphens=False)
        lines.append(f"  {entry['label'].ljust(label_width)}  {parts[0] if parts else ''}")
        lines += [" " * (label_width + 4) + part for part in parts[1:]]
    return "\n".join(lines) + "\n"


def _two_lines(header: str) -> tuple[str, str]:
    """``("peak", "(est.)")``: a header split at its first space, to keep its column narrow."""
    first, _, rest = header.partition(" ")
    return (first, rest) if rest else ("", first)
