"""The host's reading of the agent's peak and --compile figures (`Advice.from_agent`), and the
keys they add to the JSON contract."""

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.compiled import Compiled

COMPILED = {
    "temp_bytes": 900,
    "argument_bytes": 300,
    "output_bytes": 324,
    "alias_bytes": 0,
    "peak_bytes": 1524,
    "host_temp_bytes": 0,
}


def _advice(*entries):
    answer = {"status": "ok", "target": {"path": "m.py", "line": 3}, "policies": list(entries)}
    return Advice.from_agent(answer, "m.py", 3)


def _entry(policy, **extra):
    return {"policy": policy, "current": policy == "a", "device_bytes": 10, "host_bytes": 0, **extra}


def test_the_estimate_alone_adds_peak_bytes_only():
    advice = _advice(_entry("a", peak_bytes=1000), _entry("b"))
    assert [p.peak_bytes for p in advice.policies] == [1000, None]
    assert not advice.compiled
    entries = advice.to_contract(None)["policies"]
    assert entries[0]["peak_bytes"] == 1000 and entries[1]["peak_bytes"] is None
    assert not {"compiled", "estimate_error", "compile_s", "compile_error"} & set(entries[0])
    # a candidate whose peak is unknown is never suggested
    assert advice.suggest(10**9).policy == "a"


def test_compiled_figures_and_failures_are_read_and_written_back():
    advice = _advice(
        _entry("a", peak_bytes=1000, compiled=COMPILED, compile_s=1.5),
        _entry("b", peak_bytes=10, compiled=None, compile_error="XlaRuntimeError: too big"),
        _entry("c", peak_bytes=10, compiled={"temp_bytes": "many"}),
    )
    a, b, c = advice.policies
    assert a.compiled == Compiled(900, 300, 324, 0, 1524, 0) and a.compile_s == 1.5
    assert a.estimate_error == (1000 - 900) / 900
    assert b.compiled is None and b.compile_error == "XlaRuntimeError: too big" and b.was_compiled
    assert c.compiled is None and not c.was_compiled  # malformed: as if not compiled
    assert advice.compiled
    entries = advice.to_contract(None)["policies"]
    assert (
        entries[0]["compiled"] == {**COMPILED, "device_peak_bytes": 1524} and entries[0]["compile_s"] == 1.5
    )
    assert entries[0]["estimate_error"] == a.estimate_error and "compile_error" not in entries[0]
    assert entries[1]["compiled"] is None and entries[1]["estimate_error"] is None
    assert entries[1]["compile_error"] == "XlaRuntimeError: too big"
    # with --compile the budget is for the compiled temporaries: b never fits, c's estimate
    # alone does not count
    assert advice.suggest(950).policy == "a" and advice.suggest(899) is None


def test_on_a_tpu_target_each_step_fits_a_chip_or_says_by_how_much_and_the_budget_reads_the_peak():
    from dataclasses import replace

    from jax_lsp.trace.advisor.chart import memory_axis
    from jax_lsp.trace.advisor.report import format_markdown
    from jax_lsp.trace.compile_target import GiB, parse_target

    over = {
        "required_bytes": 20 * GiB,
        "available_bytes": int(15.75 * GiB),
        "message": "RESOURCE_EXHAUSTED: ...",
    }
    big = {**COMPILED, "peak_bytes": 17 * GiB, "sharding": "replicated"}
    advice = replace(
        _advice(
            _entry("a", peak_bytes=1000, compiled={**COMPILED, "sharding": "replicated"}, compile_s=1.0),
            _entry("b", peak_bytes=10, compiled=big, compile_s=1.0),
            _entry("c", peak_bytes=10, compiled=None, exhausted=over, compile_s=0.1),
        ),
        target=parse_target("v5e-1"),
    )
    a, b, c = advice.policies
    assert advice.on_tpu and c.was_compiled and c.compile_error is None
    assert [advice.fits(p) for p in advice.policies] == [True, False, False]
    assert advice.over_bytes(b) == 17 * GiB - int(15.75 * GiB)
    assert advice.over_bytes(c) == 20 * GiB - int(15.75 * GiB)
    # the budget is compared with the compiled peak (1524), not the temporaries (900)
    assert advice.suggest(1524).policy == "a" and advice.suggest(1523) is None
    contract = advice.to_contract(None)
    assert contract["compile_target"] == {
        "name": "v5e-1",
        "topology": "v5e:1x1",
        "chips": 1,
        "memory_bytes": int(15.75 * GiB),
        "source": "--target",
        "sharding": "replicated",
    }
    entries = contract["policies"]
    assert [e["fits"] for e in entries] == [True, False, False]
    assert entries[2]["exhausted"] == over and entries[2]["compiled"] is None
    text = format_markdown(advice, None)
    assert "| compiled peak | on v5e-1 |" in text
    assert "does not fit by 4.25 GiB" in text and "does not fit by 1.25 GiB" in text
    assert "v5e-1 (v5e:1x1, 1 chip of 15.75 GiB; inputs replicated)" in text
    title, plotted = memory_axis(advice)
    assert title == "compiled peak, one chip of v5e-1" and plotted(a) == 1524 and plotted(c) is None
    # compiled for the CPU: the temporaries, as before, and no fit
    on_cpu = replace(advice, target=parse_target("cpu"))
    assert (
        not on_cpu.on_tpu and on_cpu.fits(a) is None and "fits" not in on_cpu.to_contract(None)["policies"][0]
    )
    assert on_cpu.suggest(900).policy == "a"


def test_host_temporaries_are_not_the_chips_memory():
    """XLA:TPU's peak_memory_in_bytes counts the host temporaries of an offloading step too
    (tests/fixtures/advisor/offload_stack.py compiled for v5e-1: peak 17.5 GiB, host temporaries
    16 GiB; XLA compiles it for the 15.75 GiB chip): the fit, the budget, the table and the lens
    read what is left on the device."""
    from dataclasses import replace

    from jax_lsp.server.features.advisor.words import lens_summary
    from jax_lsp.trace.advisor.report import format_markdown
    from jax_lsp.trace.compile_target import GiB, parse_target

    offloaded = {**COMPILED, "peak_bytes": 17 * GiB + GiB // 2, "host_temp_bytes": 16 * GiB}
    advice = replace(
        _advice(_entry("a", peak_bytes=1000, compiled=offloaded, compile_s=1.0)), target=parse_target("v5e-1")
    )
    (a,) = advice.policies
    assert a.compiled is not None and a.compiled.device_peak_bytes == 3 * GiB // 2
    assert advice.fits(a) is True and advice.over_bytes(a) == 0
    assert advice.suggest(2 * GiB) is a and advice.suggest(GiB) is None
    assert advice.to_contract(None)["policies"][0]["compiled"]["device_peak_bytes"] == 3 * GiB // 2
    text = format_markdown(advice, None)
    assert "| 1.5 GiB | fits |" in text and "does not fit" not in text
    assert "compiled peak 1.5 GiB, fits v5e-1" in lens_summary(advice, a)


def test_on_many_chips_the_table_says_which_figures_are_per_chip():
    """The estimate's figures come from the unpartitioned trace, the compiled ones from XLA's
    partitioned step: on a multi-chip target the legend says which is which."""
    from dataclasses import replace

    from jax_lsp.trace.advisor.report import format_markdown
    from jax_lsp.trace.compile_target import parse_target

    compiled = {**COMPILED, "sharding": "example"}
    advice = _advice(_entry("a", peak_bytes=1000, compiled=compiled, compile_s=1.0))
    eight = format_markdown(replace(advice, target=parse_target("v5e-8")), None)
    assert "on 8 chips, computed, arguments, host and peak (est.) are the whole step's" in eight
    assert "the compiled figures are per chip" in eight
    assert "all chips together" not in format_markdown(replace(advice, target=parse_target("v5e-1")), None)
