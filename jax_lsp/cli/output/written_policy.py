"""`jax-lsp advise --write-policy`'s report of the written policy, under the site's table: its row
with the table's columns (the same figures as every candidate's), then what it is compared with
and the edits that give it to the user's code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.table import policy_table
from jax_lsp.trace.advisor.write.written import WRITTEN, WrittenPolicy

SHOWN_TEXT = 100  # characters of an edit's new text shown on its line


def written_block(advice: Advice, written: WrittenPolicy, root: Path | None) -> str:
    """The written policy's row (``written for 6 GiB``, the table's columns) and expression, the
    verdict, what the search spent, and the edits: the tags to add and the site's."""
    cost = written.cost
    spent = f" ({cost.compiles} written candidates compiled, {cost.seconds:.1f} s)" if cost else ""
    lines = ["", f"{written.label[0].upper()}{written.label[1:]}{spent}:"]
    entry = written.entry
    if entry is not None:
        alone = replace(advice, policies=(replace(entry, current=False),))
        table = policy_table(alone, None)
        header = ("policy", *table.words)
        row = (written.label, *table.rows[0].cells)
        widths = [max(len(header[i]), len(row[i])) for i in range(len(header))]
        for cells in (header, row):
            parts = [cells[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]
            lines.append("   " + "  ".join(parts).rstrip())
        lines.append(f"   {written.label}: {entry.policy}")
    lines.append(f"  {written.message}.")
    if written.verdict != WRITTEN:
        return "\n".join(lines)
    if written.tags:
        lines.append(f"  Tags to add ({len(written.tags)}):")
        lines += [
            f"    {relative(t.path, root)}:{t.place.line}: checkpoint_name(..., {t.name!r})"
            for t in written.tags
            if t.place is not None
        ]
    lines.append(f"  Edits ({len(written.edits)}; the JSON's written_policy.edits):")
    for edit in written.edits:
        where = f"{relative(edit.path, root)}:{edit.span.start.line + 1}:{edit.span.start.column + 1}"
        text = edit.new_text.strip().replace("\n", " ")
        lines.append(f"    {where}: {text[:SHOWN_TEXT] + ('…' if len(text) > SHOWN_TEXT else '')}")
    if written.site_edit_note:
        lines.append(f"  The site's policy is not edited: {written.site_edit_note}.")
    return "\n".join(lines)
