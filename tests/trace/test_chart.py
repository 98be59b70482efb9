"""The advice as a picture (`trace/advisor/chart.py`): well-formed SVG, a marker per candidate, one
label per point, labels that do not overlap, the budget line where the budget is."""

from __future__ import annotations

from xml.etree import ElementTree

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.chart import chart_svg, memory_axis
from jax_lsp.trace.advisor.compiled import Compiled, Exhausted
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice, Residual, Select
from jax_lsp.trace.advisor.table import policy_table
from jax_lsp.trace.compile_target import parse_target

SVG = "{http://www.w3.org/2000/svg}"
READY = "jax.checkpoint_policies."
OFFLOAD = (
    "save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=['h', 'y'], "
    "offload_src='device', offload_dst='pinned_host')"
)


def _policy(name: str, computed: int, flops: int | None, current: bool = False, error: str | None = None):
    kept = (Residual((computed,), "uint8", computed, "device", "computed", None, None, None, None, "output"),)
    peak = None if error else 2 * computed  # the step's temporaries at their peak: what is plotted
    return PolicyAdvice(
        READY + name, current, computed, 0, flops, () if error else kept, error, peak_bytes=peak
    )


ADVICE = Advice(
    "ok",
    "",
    "model.py",
    14,
    jax_version="0.10.2",
    platform="cpu",
    example="model.py:example",
    policies=(
        _policy("dots_saveable", 1536, 0, current=True),
        _policy("nothing_saveable", 0, 16384),
        _policy("dots_with_no_batch_dims_saveable", 1536, 0),
        _policy("everything_saveable", 4096, 0),
        _policy("save_only_these_names('h')", 1024, 16384),
        _policy("save_only_these_names('y')", 512, 16384),
        _policy("save_only_these_names('h', 'y')", 1536, 16384),
        _policy(OFFLOAD, 1536, 16384),
        _policy("broken_policy", 0, 0, error="TypeError: no"),
    ),
)


def _classes(element: ElementTree.Element) -> list[str]:
    return (element.get("class") or "").split()


def _parse(svg: str) -> ElementTree.Element:
    return ElementTree.fromstring(svg)


def _markers(root: ElementTree.Element) -> list[ElementTree.Element]:
    return [e for e in root.iter() if "candidate" in _classes(e)]


def _labels(root: ElementTree.Element) -> list[list[str]]:
    """Each label's policies, a policy's wrapped lines (drawn indented) joined."""
    labels = []
    for text in (e for e in root.iter(f"{SVG}text") if "label" in _classes(e)):
        policies: list[str] = []
        for tspan in text.iter(f"{SVG}tspan"):
            if float(tspan.get("x")) > float(text.get("x")):
                policies[-1] += " " * policies[-1].endswith(",") + (tspan.text or "")
            else:
                policies.append(tspan.text or "")
        labels.append(policies)
    return labels


def _center(marker: ElementTree.Element) -> tuple[float, float]:
    if marker.tag == f"{SVG}circle":
        return float(marker.get("cx")), float(marker.get("cy"))
    xs, ys = zip(*(map(float, p.split(",")) for p in marker.get("points").split()))
    return (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2


def _axis(root: ElementTree.Element, axis: str) -> tuple[float, float, float, float]:
    """(first tick's value, its coordinate, last tick's value, its coordinate) on an axis."""
    ticks = [e for e in root.iter(f"{SVG}line") if _classes(e) == ["tick", axis]]
    at = "y1" if axis == "y" else "x1"
    first, last = ticks[0], ticks[-1]
    return (
        float(first.get("data-value")),
        float(first.get(at)),
        float(last.get("data-value")),
        float(last.get(at)),
    )


def _position(value: float, axis: tuple[float, float, float, float]) -> float:
    v0, c0, v1, c1 = axis
    return c0 + (value - v0) / (v1 - v0) * (c1 - c0)


def test_a_marker_per_candidate_at_its_memory_and_recompute():
    root = _parse(chart_svg([ADVICE], None, budget=1024))
    drawn = [p for p in ADVICE.policies if p.error is None]
    markers = _markers(root)
    assert len(markers) == len(drawn)
    y_axis, x_axis = _axis(root, "y"), _axis(root, "x")
    _, memory_of = memory_axis(ADVICE)
    for policy in drawn:
        [marker] = [m for m in markers if m.findtext(f"{SVG}title").startswith(policy.policy + ":")]
        x, y = _center(marker)
        assert abs(x - _position(policy.recompute_flops, x_axis)) < 0.2
        assert abs(y - _position(memory_of(policy), y_axis)) < 0.2
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert texts[:2] == ["Remat policies at model.py:14", "example model.py:example · jax 0.10.2, cpu"]
    assert "peak (est.): the step's temporaries" in texts
    assert "Not drawn, rejected by JAX: broken_policy" in texts


def test_candidates_at_the_same_point_share_one_label_and_labels_do_not_overlap():
    root = _parse(chart_svg([ADVICE], None))
    labels = _labels(root)
    points = {(p.peak_bytes, p.recompute_flops) for p in ADVICE.policies if p.error is None}
    assert len(labels) == len(points)
    [shared] = [lines for lines in labels if "dots, no batch" in lines]
    assert shared == ["* dots", "dots, no batch"]  # named as the table abbreviates them, marked alike
    rows = [row for row in policy_table(ADVICE, None).rows if row.error is None]
    assert sorted(line for lines in labels for line in lines) == sorted(
        f"{row.symbol} {row.short}".strip() for row in rows
    )
    blocks = sorted(
        (float(e.get("y")), float(e.get("y")) + 15 * (len(list(e.iter(f"{SVG}tspan"))) - 1))
        for e in root.iter(f"{SVG}text")
        if "label" in _classes(e)
    )
    for (_, end), (start, _) in zip(blocks, blocks[1:]):
        assert start - end >= 15  # a line's height between one label's last line and the next's first
    lines = [t.text for t in root.iter(f"{SVG}tspan")]
    assert max(len(line) for line in lines) <= 24 and "offload names(h, y)" in lines
    # each abbreviation in full under the legend, wrapped to the chart's width
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "dots, no batch = dots_with_no_batch_dims_saveable" in texts
    assert "offload names(h, y) =" in texts


def test_the_budget_line_the_current_and_the_suggested_policies():
    budget = 1024
    root = _parse(chart_svg([ADVICE], None, budget=budget))
    [line] = [e for e in root.iter(f"{SVG}line") if "budget" in _classes(e)]
    y = float(line.get("y1"))
    assert line.get("y2") == line.get("y1")
    assert abs(y - _position(budget, _axis(root, "y"))) < 0.2
    suggested = ADVICE.suggest(budget)
    # 'y' fits too, with the same recompute: it keeps more for nothing
    assert suggested is not None and suggested.policy.endswith(".nothing_saveable")
    markers = _markers(root)
    [current] = [m for m in markers if "current" in _classes(m)]
    [marked] = [m for m in markers if "suggested" in _classes(m)]
    assert current.findtext(f"{SVG}title").startswith(READY + "dots_saveable:")
    assert marked.findtext(f"{SVG}title").startswith(suggested.policy + ":")
    assert _center(marked)[1] >= y  # on or under the line: it fits
    assert ["+ nothing"] in _labels(root)
    assert all(
        not any("suggested" in line for line in lines) for lines in _labels(_parse(chart_svg([ADVICE], None)))
    )


def test_zero_on_both_axes_is_drawn():
    advice = Advice("ok", "", "m.py", 3, policies=(_policy("nothing_saveable", 0, 0, current=True),))
    root = _parse(chart_svg([advice], None))
    [marker] = _markers(root)
    assert _center(marker) == (_axis(root, "x")[1], _axis(root, "y")[1])


def test_a_site_not_advised_and_several_sites():
    failed = Advice("example_error", "no function 'nowhere' in mlp.py", "mlp.py", 7)
    root = _parse(chart_svg([ADVICE, failed], None))
    sites = [e for e in root if "site" in _classes(e)]
    assert len(sites) == 2 and float(sites[1].get("y")) == float(sites[0].get("height"))
    texts = [t.text for t in sites[1].iter(f"{SVG}text")]
    assert "Not advised: no function 'nowhere' in mlp.py" in texts and not _markers(sites[1])


def _tpu_advice() -> Advice:
    """A config-keyed site compiled for v5e-1, as EasyLM's LLaMA is advised in the editor: a long
    heading, a key on every candidate, one step larger than the chip, one rejected."""
    target = parse_target("v5e-1")
    gib = 2**30

    def keyed(name: str, key: str, peak: int, flops: int, current: bool = False) -> PolicyAdvice:
        kept = (
            Residual((peak,), "uint8", peak // 4, "device", "computed", None, None, None, None, "output"),
        )
        compiled = Compiled(peak // 2, 0, 0, 0, peak_bytes=peak, sharding="replicated")
        select = Select(key, "self.config.remat_policy")
        return PolicyAdvice(
            READY + name,
            current,
            peak // 4,
            0,
            flops,
            kept,
            select=select,
            peak_bytes=peak,
            compiled=compiled,
        )

    too_large = PolicyAdvice(
        READY + "everything_saveable",
        False,
        0,
        0,
        0,
        (),
        select=Select("everything_saveable", "self.config.remat_policy"),
        exhausted=Exhausted(40 * gib, 16 * gib, "RESOURCE_EXHAUSTED"),
    )
    return Advice(
        "ok",
        "",
        "EasyLM/models/llama/llama_model.py",
        783,
        jax_version="0.10.2",
        platform="cpu",
        example="EasyLM/models/llama/llama_model.py:advise_example",
        target=target,
        policies=(
            keyed("checkpoint_dots", "checkpoint_dots", 3 * gib, 0, current=True),
            keyed("nothing_saveable", "nothing_saveable", int(1.74 * gib), 1_370_000_000_000),
            keyed(
                "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims", 2 * gib, 27 * 10**10
            ),
            too_large,
            PolicyAdvice(READY + "broken_policy", False, 0, 0, None, (), error="TypeError: no"),
        ),
    )


def test_a_tpu_target_keeps_the_chart_narrow_enough_to_read_in_a_side_panel():
    """The heading of a TPU target (the chip, its memory, the inputs' placement) and the keys wrap
    instead of widening the picture: a 460 px panel shows it at most a fifth smaller."""
    advice = _tpu_advice()
    root = _parse(chart_svg([advice], None, budget=int(1.76 * 2**30), names=False))
    width = float(root.get("width"))
    assert width <= 600, width
    for text in root.iter(f"{SVG}text"):
        x, size = float(text.get("x")), float(text.get("font-size") or 12)
        per_char = 7.3 if "label" in _classes(text) else 0.6 * size
        for line in [text.text or ""] + [t.text or "" for t in text.iter(f"{SVG}tspan")]:
            anchor = text.get("text-anchor")
            if anchor is None:  # a start-anchored line: it must end inside the picture
                assert x + len(line) * per_char <= width + 1, (line, x, width)
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert texts[0] == "Remat policies at EasyLM/models/llama/llama_model.py:783"
    assert any(t.startswith("compiled for v5e-1 (v5e:1x1, 1 chip of") for t in texts) or any(
        "compiled for v5e-1" in t for t in texts
    )
    assert "compiled peak, one chip of v5e-1" in texts
    labels = [line for lines in _labels(root) for line in lines]
    assert "* dots (remat_policy='checkpoint_dots')" in labels
    lines = " ".join(texts)  # a line under the legend wraps into several texts
    assert "Not drawn, larger than the chip (compiled peak > its memory): everything" in lines
    assert "no figure on this JAX release" not in lines
