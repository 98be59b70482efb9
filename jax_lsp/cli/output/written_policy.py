"""`jax-lsp advise --write-policy`'s report of the written policy, under the site's table: its row
with the table's columns (the same figures as every candidate's), then what it is compared with
and the edits that give it to the user's code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice, relative
from jax_lsp.trace.advisor.report import columns, policy_rows, policy_summary
from jax_lsp.trace.advisor.write.written import WRITTEN, WrittenPolicy


def written_block(advice: Advice, written: WrittenPolicy, root: Path | None) -> str:
    """The written policy's row (``written for 6 GiB``, the table's columns), its expression,
    what the search spent, the verdict, and the edits: the tags to add and the site's."""
    lines = [""]
    entry = written.entry
    if entry is not None:
        alone = replace(advice, policies=(replace(entry, current=False),))
        header = ("policy", *columns(advice))
        row = (written.label, *policy_rows(alone, None)[0][2:])
        widths = [max(len(header[i]), len(row[i])) for i in range(len(header))]
        for cells in (header, row):
            parts = [cells[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]
            lines.append("   " + "  ".join(parts).rstrip())
        lines.append(f"   {written.label}: {entry.policy}")
        lines.append(f"   ({policy_summary(entry)})")
    cost = written.cost
    spent = f" (compiled {cost.compiles} written candidates in {cost.seconds:.1f} s)" if cost else ""
    lines.append(f"Written for a budget{spent}: {written.message}.")
    if written.verdict == WRITTEN:
        if written.tags:
            lines.append(f"Tags to add ({len(written.tags)}):")
            lines += [
                f"  {relative(t.path, root)}:{t.place.line}: checkpoint_name(..., {t.name!r})"
                for t in written.tags
                if t.place is not None
            ]
        lines.append(f"Edits ({len(written.edits)}), in JSON as written_policy.edits:")
        for edit in written.edits:
            where = f"{relative(edit.path, root)}:{edit.span.start.line + 1}:{edit.span.start.column + 1}"
            text = edit.new_text.strip().replace("\n", " ")
            lines.append(f"  {where}: {text[:100] + ('…' if len(text) > 100 else '')}")
        if written.site_edit_note:
            lines.append(f"  The site's policy is not edited: {written.site_edit_note}.")
    return "\n".join(lines)
