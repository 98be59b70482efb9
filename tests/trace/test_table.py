"""The one table model (`trace/advisor/table.py`) and every view of it: the terminal's table, the
Markdown, Compare's view (VS Code) and text (Neovim), and the chart's names say the same columns in
the same order with the same words and cells, and name each policy alike."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor import table
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.chart import chart_svg
from jax_lsp.trace.advisor.comparison import comparison_text, comparison_view
from jax_lsp.trace.advisor.report import format_markdown
from jax_lsp.trace.advisor.table import COLUMNS, abbreviate, policy_table

SVG = "{http://www.w3.org/2000/svg}"
KiB = 1024
DOTS = "jax.checkpoint_policies.dots_saveable"
NOTHING = "jax.checkpoint_policies.nothing_saveable"
OFFLOAD = (
    "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], "
    "names_which_can_be_offloaded=['h', 'y'], offload_src='device', offload_dst='pinned_host')"
)


def _residual(kind="computed", size=512):
    return {"shape": [size // 4], "dtype": "float32", "bytes": size, "kind": kind}


def _entry(policy, current=False, host=0, flops=0, computed=2, **extra):
    residuals = [_residual() for _ in range(computed)] + [_residual("argument", 4 * KiB)]
    return {
        "policy": policy,
        "current": current,
        "device_bytes": 512 * computed + 4 * KiB,
        "host_bytes": host,
        "recompute_flops": flops,
        "peak_bytes": 7 * KiB,
        "residuals": residuals,
        **extra,
    }


def _advice(*entries, **extra):
    answer = {"status": "ok", "jax_version": "0.10.2", "platform": "cpu", "policies": list(entries), **extra}
    return Advice.from_agent({**answer, "target": {"path": "/p/model.py", "line": 14}}, "/p/model.py", 14)


def _keyed(policy, key, **extra):
    return _entry(policy, select={"key": key, "expression": "self.config.remat_policy"}, **extra)


ADVICE = _advice(
    _keyed(DOTS, "checkpoint_dots", current=True),
    _keyed(NOTHING, "nothing", computed=0, flops=16400),
    _entry(OFFLOAD, host=1536, flops=16400, computed=0),
    {"policy": "broken", "current": False, "residuals": [], "error": {"message": "TypeError: no"}},
    selector={"expression": "self.config.remat_policy", "current": "checkpoint_dots", "keys": ["nothing"]},
)
WORDS = ["saves", "computed", "arguments", "host", "peak (est.)", "recompute"]


def _in_order(line: str, words: list[str]) -> bool:
    """Whether ``words`` are in ``line`` in this order, each a whole header."""
    pattern = r"\s+".join(re.escape(word) for word in words)
    return re.search(rf"(^|\s|\|)\s*{pattern}(\s|\||$)", line) is not None


def test_every_view_shows_the_same_columns_words_and_cells():
    table = policy_table(ADVICE, 8 * KiB)
    assert list(table.words) == WORDS
    text = advice_table(ADVICE, None, 8 * KiB).splitlines()
    header = next(line for line in text if line.lstrip().startswith("policy"))
    assert _in_order(header, WORDS), header
    markdown = format_markdown(ADVICE, None, 8 * KiB)
    assert "| | policy | " + " | ".join(WORDS) + " |" in markdown
    view = comparison_view(ADVICE, None, 8 * KiB)
    assert view["columns"] == WORDS
    assert [h["word"] for h in view["headers"]] == WORDS
    # one cell text per figure everywhere: a zero is "0" (not "0 B"), a rejected candidate "-"
    current = next(row for row in view["rows"] if row["mark"] == "current")
    assert current["cells"] == ["3", "1 KiB", "4 KiB", "0", "7 KiB", "0"]
    assert (
        "| current | `dots_saveable (remat_policy='checkpoint_dots')` | 3 | 1 KiB | 4 KiB | 0 | 7 KiB | 0 |"
        in markdown
    )
    assert next(r for r in view["rows"] if r["policy"] == "broken")["cells"] == ["-"] * len(WORDS)
    assert any(
        re.match(
            r"^\*\s+dots_saveable \(remat_policy='checkpoint_dots'\)\s+3\s+1 KiB\s+4 KiB\s+0\s+7 KiB\s+0$",
            line,
        )
        for line in text
    ), text
    neovim = comparison_text(view, width=120).splitlines()
    first = next(i for i, line in enumerate(neovim) if line.split()[:1] == ["policy"]) - 1
    tops, bottoms = neovim[first].split(), neovim[first + 1].split()
    assert tops == ["peak"] and bottoms == ["policy", *WORDS[:4], "(est.)", "recompute"]


def test_the_text_wraps_long_names_then_abbreviates_headers_it_cannot_fit_and_says_so():
    """Neovim's 80 columns: a long name wraps at its spaces; where the words still do not fit
    (the compiled column too), the headers are abbreviated and a line says how."""
    lines = comparison_text(comparison_view(ADVICE, None, 8 * KiB)).splitlines()
    assert not any(line.startswith("Abbreviated") for line in lines)
    assert (
        "* dots" in [line.split("  ")[0] for line in lines]
        and "    (remat_policy='checkpoint_dots')" in lines
    )
    compiled = {"temp_bytes": 4 * KiB, "argument_bytes": 0, "output_bytes": 0, "alias_bytes": 0}
    wide = _advice(
        _keyed(DOTS, "checkpoint_dots", current=True, compiled=compiled),
        _entry(OFFLOAD, host=1536, flops=4_290_000_000, computed=0, compiled=compiled),
    )
    lines = comparison_text(comparison_view(wide, None, 8 * KiB)).splitlines()
    abbreviated = "comp. = computed, args = arguments, peak est. = peak (est.), XLA temp = compiled temp"
    assert f"Abbreviated: {abbreviated}, recomp. = recompute" in lines
    table = lines[lines.index("") + 1 : lines.index("", lines.index("") + 1)]
    assert max(len(line) for line in table) <= 80, "\n".join(table)
    assert table[1].split() == ["policy", "saves", "comp.", "args", "host", "est.", "temp", "recomp."]


def test_policies_are_named_alike_with_the_key_a_user_sets():
    """Compare's rows, its legend and the chart name each policy by the same abbreviation, with the
    config key that selects it (issue 50: the table showed no key, only the chart did)."""
    view = comparison_view(ADVICE, None, 8 * KiB)
    labels = [row["label"] for row in view["rows"]]
    assert labels == [
        "dots (remat_policy='checkpoint_dots')",
        "nothing (remat_policy='nothing')",
        "offload names(h, y)",
        "broken",
    ]
    assert [entry["label"] for entry in view["legend"]] == labels
    assert view["rows"][0]["name"] == "dots_saveable (remat_policy='checkpoint_dots')"
    root = ElementTree.fromstring(chart_svg([ADVICE], None, 8 * KiB))
    drawn = []
    for text in (e for e in root.iter(f"{SVG}text") if e.get("class") == "label"):
        for tspan in text.iter(f"{SVG}tspan"):
            if float(tspan.get("x")) > float(text.get("x")):
                drawn[-1] += ("" if drawn[-1].endswith("=") else " ") + (tspan.text or "")
            else:
                drawn.append(tspan.text or "")
    marks = {"current": "* ", "suggested": "+ ", "": ""}
    assert sorted(drawn) == sorted(
        marks[r["mark"]] + r["label"] for r in view["rows"] if r["policy"] != "broken"
    )


def test_a_new_column_is_one_entry(monkeypatch):
    """Every view takes its columns from `COLUMNS`: an entry added there is in each of them."""
    added = table.Column(
        "energy (est.)", "energy", table.WORDS, "the step's energy, predicted", lambda a, p: "1 J"
    )
    monkeypatch.setattr(table, "COLUMNS", (*COLUMNS, added))
    assert "energy (est.)" in advice_table(ADVICE, None)
    assert "| energy (est.) |" in format_markdown(ADVICE, None)
    view = comparison_view(ADVICE, None, None)
    assert view["columns"][-1] == "energy (est.)" and view["rows"][0]["cells"][-1] == "1 J"
    assert "energy (est.): the step's energy, predicted" in view["notes"]


def test_abbreviations_are_short_and_unique():
    assert abbreviate(DOTS) == "dots"
    assert abbreviate("jax.checkpoint_policies.save_only_these_names('h', 'y')") == "names(h, y)"
    assert abbreviate(OFFLOAD) == "offload names(h, y)"
    assert abbreviate("jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'pinned_host')") == (
        "offload dots"
    )
    assert len(abbreviate("POLICIES['a_very_long_key_that_goes_on_and_on']")) == 28
    twice = _advice(
        _entry(DOTS, current=True),
        _entry("POLICIES['dots']"),
        _entry("jax.checkpoint_policies.checkpoint_dots"),
    )
    assert [row.short for row in policy_table(twice, None).rows] == ["dots", "POLICIES['dots']", "dots #2"]
