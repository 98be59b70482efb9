"""The step-time model against the steps measured on a TPU v5e (benchmarks/records/
step_time_v5e.json, made by benchmarks/step_time/fit.py from chip_round.py's rounds): with the
constants of jax_lsp/trace/advisor/step_time.py, every candidate's predicted step from the cost
read off the chip's own compiled HLO, against its measured median. The issue's bar: at least 90%
within 20%; the record's per-model verdicts (the predicted fastest, measured, against the
measured fastest) are what the model gives today, so a change of the model or its constants that
moves them must write the record again."""

from __future__ import annotations

import importlib.util
import json

import pytest

from jax_lsp.trace.advisor.step_time import CHIPS, estimate, read_step_cost
from tests.cli.runner import REPO

RECORD = json.loads((REPO / "benchmarks" / "records" / "step_time_v5e.json").read_text())
MODELS = {"nanodo", "haliax", "recurrentgemma", "tunix", "attention_stack"}


def _predicted(entry: dict) -> float:
    found = estimate(read_step_cost(entry["cost"]), "v5e")
    assert found is not None
    return found.seconds


def test_the_record_covers_five_models_with_offloading_candidates():
    candidates = RECORD["candidates"]
    assert {c["model"] for c in candidates} >= MODELS
    offloading = [c for c in candidates if c["cost"]["host_bytes"] > 0]
    assert {c["model"] for c in offloading} >= MODELS - {"recurrentgemma"}
    assert all(c["measured_s"] > 0 and c["runs"] >= 5 for c in candidates)


def test_nine_in_ten_predicted_steps_are_within_a_fifth_of_the_measured_ones():
    candidates = RECORD["candidates"]
    errors = [_predicted(c) / c["measured_s"] - 1 for c in candidates]
    assert sum(abs(e) <= 0.2 for e in errors) >= 0.9 * len(errors)
    assert sum(abs(e) <= CHIPS["v5e"].error for e in errors) >= 0.9 * len(errors)  # the stated error


def test_the_records_figures_are_the_models_own():
    """The record's predictions and verdicts are what step_time.py's constants give."""
    for entry in RECORD["candidates"]:
        assert _predicted(entry) == pytest.approx(entry["predicted_s"], rel=1e-9)
    for model, verdict in RECORD["summary"]["models"].items():
        mine = [c for c in RECORD["candidates"] if c["model"] == model]
        fastest = min(mine, key=_predicted)
        assert fastest["policy"].removeprefix("jax.checkpoint_policies.") == verdict["predicted_fastest"]
        measured = min(c["measured_s"] for c in mine)
        assert fastest["measured_s"] / measured - 1 == pytest.approx(verdict["gap"])


def test_in_every_model_the_predicted_fastest_measures_within_three_percent_of_the_fastest():
    """The issue's bar: the candidate predicted fastest, as measured, against the one measured
    fastest (every candidate of the record fits the chip)."""
    for model in {c["model"] for c in RECORD["candidates"]}:
        mine = [c for c in RECORD["candidates"] if c["model"] == model]
        predicted = min(mine, key=_predicted)
        assert predicted["measured_s"] <= 1.03 * min(c["measured_s"] for c in mine), model


def _fit_module():
    spec = importlib.util.spec_from_file_location(
        "step_time_fit", REPO / "benchmarks" / "step_time" / "fit.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_model_predicted_with_the_constants_fitted_on_the_others():
    """Leave one model out: the constants fitted on the other four models' steps predict the
    fifth's within the issue's bars; and the record states what fit.py finds."""
    pytest.importorskip("scipy")
    fit = _fit_module()
    entries = [dict(c) for c in RECORD["candidates"]]
    left_out = fit.leave_one_model_out(entries, CHIPS["v5e"])
    found = left_out["summary"]
    assert found["within_20"] >= 0.9 * found["candidates"]
    assert all(verdict["within"] for verdict in found["models"].values())
    assert found == RECORD["leave_one_model_out"]["summary"]
