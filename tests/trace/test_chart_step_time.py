"""The chart of step time against compiled peak (issue 45 item 5, `trace/advisor/chart.py`): where
every drawn candidate's step time is known (measured, else predicted), it is the axis across, the
front of step time and memory a dashed line through the candidates no other beats on both, and
each of them a marker of class ``front``; else the recompute stays the axis."""

from __future__ import annotations

from dataclasses import replace

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.chart import chart_svg, memory_axis
from jax_lsp.trace.advisor.compiled import Compiled, Exhausted
from jax_lsp.trace.advisor.fastest import fastest, pareto_front
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice, Residual
from jax_lsp.trace.advisor.runs import DeviceRuns, StepRun
from jax_lsp.trace.advisor.step_time import CHIPS, StepCost, policy_estimate
from jax_lsp.trace.compile_target import parse_target
from tests.trace.test_chart import (
    ADVICE,
    OFFLOAD,
    READY,
    SVG,
    _axis,
    _center,
    _classes,
    _markers,
    _parse,
    _position,
)

GIB = 2**30
V5E = CHIPS["v5e"]


def _cost(milliseconds: float) -> StepCost:
    """A compute-bound step of about ``milliseconds`` on one v5e chip."""
    flops = int(V5E.matmul_flop_s * milliseconds / 1000)
    return StepCost(flops, 0, 0, 0, 0, 0, 1, (), ((flops, 0, 0, 0, 1),))


def _candidate(name: str, peak: int, milliseconds: float | None, host: int = 0, current: bool = False):
    kept = (Residual((peak,), "uint8", peak // 4, "device", "computed", None, None, None, None, "output"),)
    cost = _cost(milliseconds) if milliseconds is not None else None
    compiled = Compiled(peak // 2, 0, 0, 0, peak_bytes=peak + host, host_temp_bytes=host, cost=cost)
    return PolicyAdvice(READY + name, current, peak // 4, 0, 10**9, kept, peak_bytes=peak, compiled=compiled)


def _compiled_for_v5e(*, nothing_ms: float | None = 120.0) -> Advice:
    """Candidates compiled for v5e-1 with their programs' costs: the offloading one holds least in
    HBM (its host temporaries are not the chip's) and is slowest; nothing_saveable beats names(h)
    on both figures; one step larger than the chip, one rejected."""
    return replace(
        ADVICE,
        target=parse_target("v5e-1"),
        policies=(
            _candidate("dots_saveable", 5 * GIB, 70.0, current=True),
            _candidate("nothing_saveable", 2 * GIB, nothing_ms),
            _candidate("save_only_these_names('h')", 3 * GIB, 130.0),
            _candidate("dots_with_no_batch_dims_saveable", 4 * GIB, 80.0),
            _candidate(OFFLOAD, GIB, 190.0, host=12 * GIB),
            PolicyAdvice(
                READY + "everything_saveable",
                False,
                0,
                0,
                0,
                (),
                exhausted=Exhausted(40 * GIB, 16 * GIB, "RESOURCE_EXHAUSTED"),
            ),
            PolicyAdvice(READY + "broken_policy", False, 0, 0, None, (), error="TypeError: no"),
        ),
    )


def _tip_policy(marker) -> str:
    return marker.findtext(f"{SVG}title").split(": ")[0]


def _across_title(root) -> str:
    """The across axis's title: the text under the plot's middle."""
    x_ticks = [e for e in root.iter(f"{SVG}line") if _classes(e) == ["tick", "x"]]
    bottom = float(x_ticks[0].get("y2")) - 5
    return next(t.text for t in root.iter(f"{SVG}text") if abs(float(t.get("y")) - (bottom + 38)) < 0.2)


def test_the_predicted_step_is_the_axis_across_and_the_front_is_marked():
    advice = _compiled_for_v5e()
    root = _parse(chart_svg([advice], None, budget=3 * GIB))
    assert _across_title(root) == "step (est.): predicted for v5e-1"
    x_axis, y_axis = _axis(root, "x"), _axis(root, "y")
    ticks = [t.text for t in root.iter(f"{SVG}text") if (t.text or "").endswith(" ms")]
    assert ticks[:3] == ["0 ms", "50 ms", "100 ms"]
    _, memory_of = memory_axis(advice)
    drawn = [p for p in advice.policies if p.compiled is not None]
    markers = {_tip_policy(m): m for m in _markers(root)}
    assert set(markers) == {p.policy for p in drawn}
    for policy in drawn:
        estimate = policy_estimate(advice.target, policy)
        assert estimate is not None
        marker = markers[policy.policy]
        x, y = _center(marker)
        assert abs(x - _position(estimate.seconds * 1e9, x_axis)) < 0.2
        assert abs(y - _position(memory_of(policy), y_axis)) < 0.2  # the HBM peak, host temporaries not in it
        assert f"step (est.) {estimate.seconds * 1000:.3g} ms" in marker.findtext(f"{SVG}title")
    # the front: offload (least memory), nothing, dots no batch, dots (fastest); names(h) is beaten by nothing
    on_front = {p for p, m in markers.items() if "front" in _classes(m)}
    assert on_front == {p.policy for p in pareto_front(advice)}
    assert {p.split("(")[0].removeprefix(READY) for p in on_front} == {
        "save_and_offload_only_these_names",
        "nothing_saveable",
        "dots_with_no_batch_dims_saveable",
        "dots_saveable",
    }
    [line] = [e for e in root.iter(f"{SVG}polyline") if "front" in _classes(e)]
    points = [tuple(map(float, point.split(","))) for point in line.get("points").split()]
    expected = sorted((_center(markers[p]) for p in on_front), key=lambda c: -c[1])  # least memory first
    assert len(points) == 4 and all(abs(a - b) < 0.2 for p, e in zip(points, expected) for a, b in zip(p, e))
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "the front: none faster for as little memory" in texts and "the budget" in texts


def test_measured_steps_are_the_axis_where_every_fitting_candidate_ran():
    advice = _compiled_for_v5e()
    measured = {READY + "nothing_saveable": 0.060, READY + "dots_saveable": 0.090}
    policies = tuple(
        replace(p, run=StepRun(measured.get(p.policy, 0.100), 5, None)) if p.compiled is not None else p
        for p in advice.policies
    )
    advice = replace(advice, policies=policies, run=DeviceRuns("tpu", "TPU v5 lite", None))
    root = _parse(chart_svg([advice], None))
    assert _across_title(root) == "step: measured on TPU v5 lite (tpu)"
    markers = {_tip_policy(m): m for m in _markers(root)}
    x_axis = _axis(root, "x")
    x, _ = _center(markers[READY + "nothing_saveable"])
    assert abs(x - _position(0.060 * 1e9, x_axis)) < 0.2
    # nothing_saveable is now both the fastest and the second smallest: only offload is beside it
    on_front = {p.removeprefix(READY).split("(")[0] for p, m in markers.items() if "front" in _classes(m)}
    assert on_front == {"nothing_saveable", "save_and_offload_only_these_names"}
    assert fastest(advice).policy.policy == READY + "nothing_saveable"  # type: ignore[union-attr]


def test_the_recompute_stays_across_where_a_drawn_candidates_step_time_is_unknown():
    # compiled, but one candidate's program has no cost (an older agent): no time axis, no front
    root = _parse(chart_svg([_compiled_for_v5e(nothing_ms=None)], None))
    assert _across_title(root) == "recompute: FLOPs done again in the backward pass"
    assert not [e for e in root.iter() if "front" in _classes(e)]
    assert len(_markers(root)) == 5  # all the compiled ones, at their recompute
    # not compiled at all: the estimate's chart, as before
    estimated = _parse(chart_svg([ADVICE], None))
    assert _across_title(estimated) == "recompute: FLOPs done again in the backward pass"
    assert not [e for e in estimated.iter() if "front" in _classes(e)]
