"""`advise --compile`'s predicted step per candidate (issue 45): `step_estimate_s` in the JSON,
the `step (est.)` column and the fastest that fits under the table, the budget's suggestion
ranked by it, measured steps over predicted ones; on the CPU target, said to be the CPU's."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.server.features.advisor.words import lens_summary
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.chart import chart_svg
from jax_lsp.trace.advisor.comparison import comparison_view
from jax_lsp.trace.advisor.fastest import fastest, pareto_front, seconds_text, time_and_peak
from jax_lsp.trace.advisor.runs import StepRun
from jax_lsp.trace.advisor.step_time import CHIPS, StepCost, estimate, read_step_cost, tie
from tests.agent import ADVISOR_FIXTURES, line_of

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

STACK = ADVISOR_FIXTURES / "peak_stack.py"
SITE = [f"{STACK}:{line_of(STACK)}", "--example", "peak_stack.py:example", "--root", str(ADVISOR_FIXTURES)]


@pytest.fixture(scope="module")
def compiled(cli, tmp_path_factory):
    """peak_stack's candidates compiled for the CPU (the local target), as JSON."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["advise", *SITE, "--compile", "--output-format", "json"])
    assert code == 0
    return json.loads(out.getvalue())


def test_every_compiled_candidate_has_a_predicted_step_and_what_it_came_from(compiled):
    for entry in compiled["policies"]:
        seconds, found = entry["step_estimate_s"], entry["step_estimate"]
        assert isinstance(seconds, float) and seconds > 0 and found["seconds"] == seconds
        assert found["chip"] == "cpu" and found["bound"] in ("compute", "memory", "host", "overhead")
        # 24 scanned layers: the loop's trips applied to its body's products
        assert 24 in found["loop_trips"] and found["uncounted_loops"] == 0
        assert found["flops"] >= 24 * 2 * (2 * 256 * 256 * 1024)
        assert entry["compiled"]["cost"]["flops"] == found["flops"]


def test_the_table_says_it_is_the_cpus_time_and_which_is_fastest(compiled):
    advice = Advice.from_contract(compiled, root=ADVISOR_FIXTURES)
    table = advice_table(advice, ADVISOR_FIXTURES)
    assert "cpu step (est.)" in table and "this machine's CPU" in table
    assert "not static" not in table  # the scan's 24 trips are stated
    found = fastest(advice)
    assert found is not None and not found.measured
    assert f"Fastest that fits (predicted for cpu): {found.policy.policy.split('.')[-1]}" in table


def test_the_lens_gives_the_current_policys_step_and_the_fastest_that_fits(compiled):
    advice = Advice.from_contract(compiled, root=ADVISOR_FIXTURES)
    current = advice.current
    assert current is not None
    summary = lens_summary(advice, current)
    predicted = estimate(current.compiled.cost, None)  # type: ignore[union-attr]
    assert predicted is not None
    assert f"step (est.) {seconds_text(predicted.seconds)} on this CPU" in summary
    assert "the fastest that fits" in summary or "fastest that fits: " in summary


def test_the_budgets_suggestion_is_the_fastest_predicted_that_fits_and_a_measured_step_wins(compiled):
    advice = Advice.from_contract(compiled, root=ADVISOR_FIXTURES)
    budget = max(p.compiled.temp_bytes for p in advice.policies if p.compiled is not None)
    predicted = {p.policy: p for p in advice.policies if p.compiled is not None}
    seconds = {
        p.policy: estimate(p.compiled.cost, None).seconds  # type: ignore[union-attr]
        for p in predicted.values()
    }
    suggested = advice.suggest(budget)
    assert suggested is not None and seconds[suggested.policy] == min(seconds.values())
    # measured: the slowest predicted one ran fastest, and is suggested
    slowest = max(seconds, key=lambda policy: seconds[policy])
    measured = [
        replace(p, run=StepRun(0.001 if p.policy == slowest else 0.002, 5, None)) for p in advice.policies
    ]
    ran = replace(advice, policies=tuple(measured))
    assert ran.suggest(budget).policy == slowest  # type: ignore[union-attr]
    assert fastest(ran).measured and fastest(ran).policy.policy == slowest  # type: ignore[union-attr]


def _cost(buckets, host=0, in_loops=0, operations=10):
    return StepCost(0, 0, 0, 0, host, in_loops, operations, (), tuple(buckets))


def test_each_operation_takes_the_longer_of_its_work_and_its_bytes():
    v5e = CHIPS["v5e"]
    compute_bound = (int(v5e.matmul_flop_s * 0.01), 0, int(v5e.hbm_bytes_s * 0.001), 0, 5)  # 10 ms vs 1 ms
    memory_bound = (int(v5e.matmul_flop_s * 0.001), 0, int(v5e.hbm_bytes_s * 0.004), 0, 5)  # 1 ms vs 4 ms
    found = estimate(_cost([compute_bound, memory_bound]), "v5e")
    assert found is not None
    overhead = 10 * v5e.operation_s + v5e.step_s
    assert found.seconds == pytest.approx(0.014 + overhead, rel=1e-6)
    assert found.bound == "compute" and found.compute_s == pytest.approx(0.011, rel=1e-6)
    # the host link: bytes moved in a loop's body wait between its operations, at the link's rate
    moved = int(v5e.host_bytes_s * 0.02)  # 20 ms of transfers
    in_loops = estimate(_cost([compute_bound, memory_bound], host=moved, in_loops=moved), "v5e")
    assert (
        in_loops is not None and in_loops.bound == "host" and in_loops.host_s == pytest.approx(0.02, rel=1e-6)
    )
    assert in_loops.seconds == pytest.approx(found.seconds + 0.02, rel=1e-6)
    # moved outside loops, they overlap the device's work (14 ms of it here)
    outside = estimate(_cost([compute_bound, memory_bound], host=moved), "v5e")
    hidden = v5e.host_overlap * 0.014
    assert outside is not None and outside.seconds == pytest.approx(found.seconds + 0.02 - hidden, rel=1e-6)


def test_asynchronous_copies_are_hidden_under_the_devices_work():
    """A ``copy-start`` within the device runs on the chip's DMA engines beside the computation:
    its bytes add nothing while the operations take longer, and only what outlasts them."""
    v5e = CHIPS["v5e"]
    work = (0, 0, int(v5e.hbm_bytes_s * 0.010), 0, 5)  # 10 ms of synchronous memory traffic
    alone = estimate(_cost([work]), "v5e")
    beside = estimate(replace(_cost([work]), async_bytes=int(v5e.hbm_bytes_s * 0.004)), "v5e")
    assert alone is not None and beside is not None
    assert beside.seconds == pytest.approx(alone.seconds, rel=1e-9)
    longer = estimate(replace(_cost([work]), async_on_chip_bytes=int(v5e.on_chip_bytes_s * 0.013)), "v5e")
    assert longer is not None and longer.seconds == pytest.approx(alone.seconds + 0.003, rel=1e-6)
    # an older answer's cost, without the keys: no copies apart
    raw = _cost([work]).to_json()
    del raw["async_bytes"], raw["async_on_chip_bytes"]
    assert read_step_cost(raw) == _cost([work])


def test_predictions_within_the_stated_error_tie():
    assert tie(1.0, 1.05, 0.1) and not tie(1.0, 1.2, 0.1)
    assert estimate(None, "v5e") is None
    assert estimate(_cost([]), "v7x").chip == "cpu"  # type: ignore[union-attr]


def test_the_pareto_front_of_step_time_and_compiled_peak(compiled):
    advice = Advice.from_contract(compiled, root=ADVISOR_FIXTURES)
    points = time_and_peak(advice)
    front = pareto_front(advice)
    assert front and len(points) == len([p for p in advice.policies if p.compiled is not None])
    on_front = {id(p) for p in front}
    for policy, seconds, peak in points:
        beaten = any(s <= seconds and k <= peak and (s, k) != (seconds, peak) for _, s, k in points)
        assert (id(policy) in on_front) == (not beaten)
    # the smallest peak's candidate with the least time among them is on it, and so is the fastest
    assert min(points, key=lambda point: (point[2], point[1]))[0] is front[0]
    assert fastest(advice).policy in front  # type: ignore[union-attr]


def test_the_chart_draws_the_predicted_step_against_the_compiled_memory_and_the_front(compiled):
    from xml.etree import ElementTree

    advice = Advice.from_contract(compiled, root=ADVISOR_FIXTURES)
    root = ElementTree.fromstring(chart_svg([advice], ADVISOR_FIXTURES))
    svg = "{http://www.w3.org/2000/svg}"
    texts = [t.text or "" for t in root.iter(f"{svg}text")]
    assert "cpu step (est.): predicted for cpu" in texts
    assert "recompute: FLOPs done again in the backward pass" not in texts
    markers = [e for e in root.iter() if "candidate" in (e.get("class") or "").split()]
    on_front = {
        m.findtext(f"{svg}title").split(": ")[0] for m in markers if "front" in m.get("class").split()
    }
    assert on_front == {p.policy for p in pareto_front(advice)}


def test_compare_shows_the_predicted_step_and_names_the_fastest(compiled):
    advice = Advice.from_contract(compiled, root=ADVISOR_FIXTURES)
    view = comparison_view(advice, ADVISOR_FIXTURES, None)
    column = view["columns"].index("cpu step (est.)")
    for row, policy in zip(view["rows"], advice.policies):
        assert row["cells"][column] == seconds_text(estimate(policy.compiled.cost, None).seconds)  # type: ignore[union-attr]
    assert any(note.startswith("Fastest that fits (predicted for cpu): ") for note in view["notes"])


def test_a_loop_whose_trip_count_is_not_static_is_said_under_the_table(cli, capsys):
    loop = ADVISOR_FIXTURES / "dynamic_loop.py"
    site = [
        f"{loop}:{line_of(loop)}",
        "--example",
        "dynamic_loop.py:example",
        "--root",
        str(ADVISOR_FIXTURES),
    ]
    assert cli(["advise", *site, "--compile", "--policies", "dots_saveable", "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(p["step_estimate"]["uncounted_loops"] == 1 for p in data["policies"])
    table = advice_table(Advice.from_contract(data, root=ADVISOR_FIXTURES), ADVISOR_FIXTURES)
    assert "Note: cpu step (est.) counts once a loop whose trip count is not static" in table
