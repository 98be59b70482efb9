"""Issue 46's chip part, kept (benchmarks/records/write_policy_on_chip_v5e.json, made by
benchmarks/write_policy/chip_record.py from benchmarks/write_policy/on_chip.sh's round on a TPU
v5e): each written policy the search found best at a chip's scale, its edits applied to the
model's code, run on the chip against the best named policy that fits (`advise --run` medians).
It must be no slower; and it is the policy the search offered in the round that made the cases
(write_policy_v5e1_strict.json: `write_policy_models.py --strict`, which offers any predicted
gain), whose predictions the measured steps bear out within the model's error."""

from __future__ import annotations

import json

from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.compile_target import parse_target
from tests.cli.runner import REPO

RECORDS = REPO / "benchmarks" / "records"
ON_CHIP = json.loads((RECORDS / "write_policy_on_chip_v5e.json").read_text(encoding="utf-8"))
# the round that offered them: write_policy_models.py --strict (offers any predicted gain)
SEARCH = {
    m["model"]: m for m in json.loads((RECORDS / "write_policy_v5e1_strict.json").read_text(encoding="utf-8"))
}
NO_SLOWER = 1.03  # on_chip.py's: measured medians within 3% are as fast (a step's run-to-run spread)
ERROR = step_time.chip_for(step_time.generation_of(parse_target("v5e-1"))).error


def test_written_policies_of_three_models_ran_on_a_v5e():
    assert {case["model"] for case in ON_CHIP} >= {"nanodo", "tunix", "recurrentgemma"}
    assert all("v5" in case["device"] for case in ON_CHIP)


def test_each_measured_written_policy_is_no_slower_than_the_best_named_one_that_fits():
    for case in ON_CHIP:
        measured = case["measured_s"]
        assert measured["written"] / measured["named"] <= NO_SLOWER, case


def test_the_measured_policies_are_the_ones_the_search_offered_at_that_budget():
    for case in ON_CHIP:
        [budget] = [b for b in SEARCH[case["model"]]["budgets"] if b["budget"] == case["budget"]]
        assert budget["verdict"] == "written" and budget["fits"] is True
        assert budget["written"]["policy"] == case["written"]["policy"]
        assert budget["named"]["policy"] == case["named"]["policy"]


def test_the_predictions_hold_within_the_step_models_error():
    for case in ON_CHIP:
        for side in ("written", "named"):
            predicted, measured = case[side]["predicted_s"], case["measured_s"][side]
            assert abs(predicted / measured - 1) <= ERROR, (case["case"], side)
