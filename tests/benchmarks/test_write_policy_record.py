"""`advise --write-policy` at a chip's scale on four public models (benchmarks/write_policy_models.py,
compiled for v5e-1 from a CPU machine; docs/advise.md, "A written policy on public models"): the
committed record holds what issue 46 asks of the search, 3 budgets of each model between the
smallest and the largest compiled peak of the named candidates, every written policy fitting when
compiled, and the search within 2 times `advise --compile`. Making the record takes the harness
about 36 minutes with libtpu and the models' packages (see its docstring); this reads it."""

from __future__ import annotations

import json

from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.compile_target import parse_target
from tests.cli.runner import REPO

RECORD = json.loads((REPO / "benchmarks" / "records" / "write_policy_v5e1.json").read_text(encoding="utf-8"))


def test_four_models_three_budgets_each_between_the_named_peaks():
    assert {m["model"] for m in RECORD} == {"nanodo", "haliax", "tunix", "recurrentgemma"}
    for model in RECORD:
        assert model["target"] == "v5e-1"
        on_device = [n["size"] for n in model["named"] if "offload" not in n["policy"]]
        budgets = [b["budget"] for b in model["budgets"]]
        assert len(budgets) == 3 and all(min(on_device) < b < max(on_device) for b in budgets), model["model"]


def test_every_written_policy_fits_and_the_search_costs_under_twice_the_named_compiles():
    for model in RECORD:
        for budget in model["budgets"]:
            assert budget["fits"] is True, (model["model"], budget["budget"])
            assert (model["named_s"] + budget["search_s"]) / model["named_s"] < 2.0, (model["model"], budget)


def test_a_written_policy_is_offered_only_where_it_beats_the_best_named_one_beyond_the_error():
    error = step_time.chip_for(step_time.generation_of(parse_target("v5e-1"))).error
    for model in RECORD:
        for budget in model["budgets"]:
            named, written = budget["named"]["step_estimate_s"], budget["written"]
            if budget["verdict"] == "written":
                seconds = written["step_estimate_s"]
                assert seconds < named and not step_time.tie(seconds, named, error), budget
            else:
                assert written is None and "beyond the step model's error" in budget["message"]
