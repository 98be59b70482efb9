"""The budget's suggestion where the steps ran on the device (`advise --run`): a measured peak in
use over the budget never fits, and a clearly slower measured step loses its place
(docs/advise.md, "Measured on the device")."""

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.server.features.advisor.words import why_suggested
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.report import format_markdown, passed_over, slower_words
from jax_lsp.trace.advisor.runs import StepRun, clearly_slower, own_peak, peak_in_use_text

MiB = 2**20
DOTS = "jax.checkpoint_policies.dots_saveable"
NOTHING = "jax.checkpoint_policies.nothing_saveable"
OFFLOAD = "jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'pinned_host')"


def _entry(policy, peak_mib, flops, step_ms=None, in_use_mib=None, host=0, current=False, at_most_mib=None):
    entry = {
        "policy": policy,
        "current": current,
        "device_bytes": 10,
        "host_bytes": host,
        "recompute_flops": flops,
        "peak_bytes": peak_mib * MiB,
    }
    if step_ms is not None:
        entry["run"] = {
            "step_s": step_ms / 1000,
            "runs": 5,
            "peak_bytes_in_use": None if in_use_mib is None else in_use_mib * MiB,
            "peak_bytes_at_most": None if at_most_mib is None else at_most_mib * MiB,
        }
    return entry


def _advice(*entries, ran=True):
    answer = {
        "status": "ok",
        "platform": "tpu",
        "target": {"path": "m.py", "line": 3},
        "policies": list(entries),
    }
    if ran:
        answer["run"] = {"platform": "tpu", "device": "TPU v5 lite", "note": None}
    return Advice.from_agent(answer, "m.py", 3)


def test_a_runs_peak_in_use_is_its_own_or_the_mark_it_stayed_under():
    assert peak_in_use_text(StepRun(0.1, 5, 106 * 2**20)) == "106 MiB"
    assert peak_in_use_text(StepRun(0.1, 5, None, peak_bytes_at_most=107 * 2**20)) == "≤ 107 MiB"
    assert peak_in_use_text(StepRun(0.1, 5, None)) == "?"  # the CPU counts none
    assert peak_in_use_text(StepRun(None, None, None, "OOM")) == "?"
    assert own_peak(StepRun(0.1, 5, None, peak_bytes_at_most=50)) is None  # never fits on a bound


def test_clearly_slower_is_half_again_and_a_millisecond_more():
    assert clearly_slower(StepRun(0.123, 5, None), 0.038)
    assert not clearly_slower(StepRun(0.046, 5, None), 0.038)  # 1.2x: the recompute decides
    assert not clearly_slower(StepRun(0.0009, 5, None), 0.0003)  # 3x, but 0.6 ms: noise
    assert not clearly_slower(None, 0.038) and not clearly_slower(StepRun(0.2, 5, None), None)


def test_an_offload_measured_three_times_slower_loses_to_the_recompute_and_says_so():
    # the TPU v5e figures: offloading a stack's dots made the step 3.2x slower
    advice = _advice(
        _entry(OFFLOAD, 10, 0, step_ms=123, host=4 * MiB),
        _entry(DOTS, 40, 100, step_ms=38),
        _entry(NOTHING, 12, 300, step_ms=46, current=True),
    )
    # by recompute alone, dots_saveable; within 20 MiB, nothing_saveable (no offload first)
    assert advice.suggest(64 * MiB).policy == DOTS
    assert advice.suggest(20 * MiB).policy == NOTHING
    # within 11 MiB only the offload fits: measured slow, it is still the one that fits
    assert advice.suggest(11 * MiB).policy == OFFLOAD and passed_over(advice, 11 * MiB) is None


def test_a_clearly_faster_measured_step_breaks_the_ranking():
    advice = _advice(
        _entry(DOTS, 40, 100, step_ms=90),
        _entry(NOTHING, 12, 300, step_ms=40, current=True),
        _entry("jax.checkpoint_policies.everything_saveable", 80, 0, step_ms=30),
    )
    assert advice.suggest(50 * MiB, by_time=False).policy == DOTS
    assert advice.suggest(50 * MiB).policy == NOTHING  # dots measured 2.2x slower
    found = passed_over(advice, 50 * MiB)
    assert found is not None and found[0].policy == DOTS and round(found[1], 2) == 2.25
    assert slower_words(found) == "dots_saveable measured 2.2x slower"
    assert why_suggested(advice, advice.suggest(50 * MiB), 50 * MiB) == (
        "(peak (est.) 12 MiB within the 50 MiB budget, on tpu; dots_saveable measured 2.2x slower)"
    )
    assert "*Chosen by the measured step times: dots_saveable measured 2.2x slower.*" in format_markdown(
        advice, None, 50 * MiB
    )
    assert "  (chosen by the measured step times: dots_saveable measured 2.2x slower)" in advice_table(
        advice, None, 50 * MiB
    )
    # without runs, the ranking is the recompute's
    unmeasured = _advice(_entry(DOTS, 40, 100), _entry(NOTHING, 12, 300, current=True), ran=False)
    assert unmeasured.suggest(50 * MiB).policy == DOTS and passed_over(unmeasured, 50 * MiB) is None


def test_a_measured_peak_over_the_budget_never_fits():
    names = "jax.checkpoint_policies.save_only_these_names('h')"
    advice = _advice(
        _entry(NOTHING, 12, 300, step_ms=40, in_use_mib=30, current=True),
        _entry(DOTS, 20, 100, step_ms=38, in_use_mib=60),  # its estimate fits 50 MiB; it used 60
        _entry(names, 20, 200, step_ms=38, at_most_mib=60),  # the mark did not rise: at most 60
        _entry("jax.checkpoint_policies.everything_saveable", 80, 0, step_ms=38, in_use_mib=70),
    )
    assert advice.suggest(50 * MiB).policy == names  # its own peak is not known to be over
    assert advice.suggest(61 * MiB).policy == DOTS


def test_the_budgets_check_also_compiles_a_later_candidate_measured_clearly_faster():
    """`fit.check_fit` stops at the first tie that fits, but for a candidate whose step measured
    clearly faster: it may still win, so it is compiled too. ``compile_candidates`` answers with
    the compiled temporaries given here, as the agent's compile answers (`fit.py` reads them)."""
    from jax_lsp.trace.advisor.fit import check_fit

    temps = {DOTS: 30, NOTHING: 10, OFFLOAD: 5}
    advice = _advice(
        _entry(OFFLOAD, 10, 0, step_ms=123, host=4 * MiB),
        _entry(DOTS, 40, 100, step_ms=90),
        _entry(NOTHING, 12, 300, step_ms=40, current=True),
    )
    asked = []

    def compile_candidates(policies):
        asked.append(policies)
        entries = [
            {
                **_entry(p, 10, 0, current=p == NOTHING),
                "compiled": {
                    "temp_bytes": temps[p] * MiB,
                    "argument_bytes": 0,
                    "output_bytes": 0,
                    "alias_bytes": 0,
                },
            }
            for p in policies
        ]
        return _advice(*entries, ran=False)

    checked = check_fit(advice, 50 * MiB, compile_candidates)
    # dots_saveable (the least recompute) fits; nothing_saveable measured 2.2x faster: compiled
    # too; the offload, measured slower, is not
    assert asked == [[DOTS], [NOTHING]]
    assert checked.suggest(50 * MiB).policy == NOTHING
    without_runs = _advice(
        _entry(OFFLOAD, 10, 0, host=4 * MiB), _entry(DOTS, 40, 100), _entry(NOTHING, 12, 300)
    )
    asked.clear()
    assert check_fit(without_runs, 50 * MiB, compile_candidates).suggest(50 * MiB).policy == DOTS
    assert asked == [[DOTS]]
