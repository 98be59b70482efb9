"""`advise --write-policy` at a chip's scale on four public models (benchmarks/write_policy_models.py,
compiled for v5e-1 from a CPU machine; docs/advise.md, "A written policy on public models"): the
committed record holds what issue 46 asks of the search, 3 budgets of each model between the
smallest and the largest compiled peak of the named candidates and the search within 2 times
`advise --compile`, and what docs/advise.md says of it: where no written policy is offered, the
best written one is within the step model's stated error of the best named one. Making the
record takes the harness about 36 minutes with libtpu and the models' packages (see its
docstring); this reads it."""

from __future__ import annotations

import json
import re

from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.compile_target import parse_target
from tests.cli.runner import REPO

RECORD = json.loads((REPO / "benchmarks" / "records" / "write_policy_v5e1.json").read_text(encoding="utf-8"))
ERROR = step_time.chip_for(step_time.generation_of(parse_target("v5e-1"))).error
TIED = re.compile(r"beyond the step model's error: the best, .*, ([\d.]+) ms a step against ([\d.]+) ms")


def _rows():
    return [(model, budget) for model in RECORD for budget in model["budgets"]]


def test_four_models_three_budgets_each_between_the_named_peaks():
    assert {m["model"] for m in RECORD} == {"nanodo", "haliax", "tunix", "recurrentgemma"}
    for model in RECORD:
        assert model["target"] == "v5e-1"
        on_device = [n["size"] for n in model["named"] if "offload" not in n["policy"]]
        budgets = [b["budget"] for b in model["budgets"]]
        assert len(budgets) == 3 and all(min(on_device) < b < max(on_device) for b in budgets), model["model"]


def test_the_search_costs_under_twice_the_named_compiles():
    for model, budget in _rows():
        assert (model["named_s"] + budget["search_s"]) / model["named_s"] < 2.0, (model["model"], budget)


def test_a_written_policy_offered_fits_compiles_as_applied_and_beats_the_named_one_beyond_the_error():
    for _, budget in _rows():
        written, named = budget["written"], budget["named"]["step_estimate_s"]
        if budget["verdict"] == "written":
            assert budget["fits"] is True and budget["applied"]["same_peak"] is True, budget
            seconds = written["step_estimate_s"]
            assert seconds < named and not step_time.tie(seconds, named, ERROR), budget
        else:
            assert written is None and budget["fits"] is None, budget


def test_where_the_named_one_is_suggested_the_best_written_one_is_slower_or_ties_with_it():
    tied = [(model["model"], TIED.search(b["message"])) for model, b in _rows() if b["verdict"] == "named"]
    assert tied and all(found is not None for _, found in tied), tied
    figures = [(float(found.group(1)), float(found.group(2))) for _, found in tied]
    faster = [(written, named) for written, named in figures if written < named]
    assert all(step_time.tie(written, named, ERROR) for written, named in faster)
    # docs/advise.md: 7 of the 12 predicted faster than the best named one, by at most 3%; haliax's slower
    assert len(faster) == 7 and all(
        round(100 * (named - written) / named, 1) <= 3.0 for written, named in faster
    )
    assert {model for (model, _), (w, n) in zip(tied, figures) if w > n} == {"haliax", "recurrentgemma"}
