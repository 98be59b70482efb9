"""The one layout of "Compare policies" (`trace.advisor.comparison`): the abbreviated names and
their legend, the columns, the measured figures where the steps ran, and the text Neovim shows."""

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.comparison import comparison_text, comparison_view

OFFLOAD = (
    "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], "
    "names_which_can_be_offloaded=['h', 'y'], offload_src='device', offload_dst='pinned_host')"
)
DOTS = "jax.checkpoint_policies.dots_saveable"
KiB = 1024


def _residuals(count):
    return [{"shape": [8], "dtype": "float32", "bytes": 512, "kind": "computed"}] * count


def _entry(policy, current=False, run=None, **extra):
    entry = {
        "policy": policy,
        "current": current,
        "device_bytes": 1536,
        "host_bytes": 0,
        "recompute_flops": 0,
        "peak_bytes": 7 * KiB,
        "residuals": _residuals(3),
        **extra,
    }
    return {**entry, "run": run} if run is not None else entry


def _advice(*entries, run=None):
    answer = {
        "status": "ok",
        "jax_version": "0.10.2",
        "platform": "cpu",
        "target": {"path": "/p/mlp.py", "line": 14},
        "policies": list(entries),
    }
    return Advice.from_agent({**answer, "run": run} if run else answer, "/p/mlp.py", 14)


def test_the_view_a_row_per_candidate_host_traffic_the_legend_in_full():
    advice = _advice(
        _entry(DOTS, current=True),
        _entry(OFFLOAD, host_bytes=1536, recompute_flops=16400, residuals=_residuals(2)),
        _entry("broken", error={"message": "TypeError: no\nmore"}),
    )
    view = comparison_view(advice, None, None)
    assert (view["title"], view["facts"]) == ("/p/mlp.py:14", "jax 0.10.2, cpu")
    assert view["columns"] == ["saves", "computed", "arguments", "host", "peak (est.)", "recompute"]
    assert [(r["mark"], r["label"], r["cells"]) for r in view["rows"]] == [
        ("current", "dots", ["3", "1.5 KiB", "0", "0", "7 KiB", "0"]),
        ("", "offload names(h, y)", ["2", "1 KiB", "0", "1.5 KiB", "7 KiB", "16.4 kFLOP"]),
        ("", "broken", ["-"] * 6),
    ]
    assert view["legend"][1] == {"label": "offload names(h, y)", "policy": OFFLOAD, "error": None}
    assert view["legend"][2]["error"] == "TypeError: no"
    assert view["budget"].startswith("no suggestion: set the advise.budget setting")


def test_measured_steps_and_peaks_are_shown_beside_the_compiled_figures():
    def run(ms, in_use, at_most=None):
        return {"step_s": ms / 1000, "runs": 5, "peak_bytes_in_use": in_use, "peak_bytes_at_most": at_most}

    compiled = {"temp_bytes": 4 * KiB, "argument_bytes": 0, "output_bytes": 0, "alias_bytes": 0}
    advice = _advice(
        _entry(DOTS, current=True, run=run(38, 40 * KiB), compiled=compiled),
        _entry("jax.checkpoint_policies.nothing_saveable", run=run(46, None, 40 * KiB), compiled=compiled),
        _entry(OFFLOAD, host_bytes=1536, run=run(123, 50 * KiB)),
        run={"platform": "tpu", "device": "TPU v5 lite", "note": None},
    )
    view = comparison_view(advice, None, 6 * KiB)
    assert view["columns"][-3:] == ["recompute", "step", "peak in use"] and "compiled temp" in view["columns"]
    at = view["columns"].index
    cells = [r["cells"] for r in view["rows"]]
    assert [c[at("step")] for c in cells] == ["38 ms", "46 ms", "123 ms"]
    # the high-water mark of one process: the second did not raise it, its own peak is at most it
    assert [c[at("peak in use")] for c in cells] == ["40 KiB", "≤ 40 KiB", "50 KiB"]
    assert [c[at("compiled temp")] for c in cells] == ["4 KiB", "4 KiB", ""]
    assert any(
        n.startswith("step: the compiled step's median time over 5 runs on TPU v5 lite (tpu)")
        for n in view["notes"]
    )


def test_the_text_fits_80_columns_with_the_same_labels_and_legend():
    advice = _advice(
        _entry(DOTS, current=True),
        _entry(OFFLOAD, host_bytes=1536, recompute_flops=4_290_000_000),
        _entry(
            "jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'pinned_host')", host_bytes=512
        ),
    )
    view = comparison_view(advice, None, 8 * KiB)
    text = comparison_text(view)
    lines = text.splitlines()
    # the table and the notes fit; the legend wraps a policy at its spaces, under its label
    assert max(len(line) for line in lines[: lines.index("Legend:")]) <= 80, text
    header = next(i for i, line in enumerate(lines) if line.startswith("policy"))
    assert lines[header - 1].split() == ["peak"]
    assert lines[header].split() == [
        "policy",
        "saves",
        "computed",
        "arguments",
        "host",
        "(est.)",
        "recompute",
    ]
    assert lines[header + 1].split() == ["*", "dots", "3", "1.5", "KiB", "0", "0", "7", "KiB", "0"]
    assert lines[header + 2].startswith("  offload names(h, y) ")
    legend = lines[lines.index("Legend:") + 1 :]
    assert legend[0].split() == ["dots", DOTS]
    assert legend[1].startswith(
        "  offload names(h, y)  jax.checkpoint_policies.save_and_offload_only_these_names("
    )
    assert legend[2:4] == [
        " " * 23 + "names_which_can_be_offloaded=['h', 'y'],",
        " " * 23 + "offload_src='device', offload_dst='pinned_host')",
    ]
    assert legend[4].startswith(
        "  offload dots         jax.checkpoint_policies.offload_dot_with_no_batch_dims("
    )
