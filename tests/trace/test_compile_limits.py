"""`advise --compile` never loses the table: each candidate compiles in a process of its own, and
one that runs out of memory or time is a row that says so."""

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.options import TraceOptions
from tests.agent import advise_fixture, needs_linux

pytestmark = needs_linux


def _advise(service, options):
    return advise_fixture(
        service,
        "big_constant",
        "nothing_saveable",
        compile=True,
        options=options,
    )


def test_a_compile_that_runs_out_of_memory_is_a_row_that_says_so(service):
    """Tracing the step fits in 400 MiB, compiling it does not: the table keeps every candidate
    with its traced figures, and each row says its compile ran out of memory; with room, the
    same candidates compile."""
    advice = _advise(service, TraceOptions(compile_memory_mb=400))
    assert advice.ok, advice.message
    assert len(advice.policies) == 2 and advice.compiled
    for entry in advice.policies:
        assert entry.compiled is None and entry.peak_bytes and entry.residuals
        assert entry.compile_stopped in ("memory", "crashed"), entry.compile_error
        assert entry.compile_error is not None and "raise --compile-memory-limit-mb" in entry.compile_error
    table = advice_table(advice, None, None)
    assert table.count("out of memory") + table.count("crashed") >= 2, table
    roomy = _advise(service, TraceOptions(compile_memory_mb=2048))
    assert [p.compiled is not None and p.compile_error is None for p in roomy.policies] == [True, True]
    assert [p.peak_bytes for p in roomy.policies] == [p.peak_bytes for p in advice.policies]


def test_a_compile_that_runs_out_of_time_is_a_row_that_says_so(service):
    # Far under what the step takes to compile (0.4 s on a quiet CI machine): 0.5 s once let one through.
    advice = _advise(service, TraceOptions(compile_timeout=0.1))
    assert advice.ok, advice.message
    for entry in advice.policies:
        assert entry.compiled is None and entry.peak_bytes
        assert entry.compile_stopped == "timeout"
        assert entry.compile_error == "did not compile within 0.1 s and was stopped: raise --compile-timeout"
    assert advice_table(advice, None, None).count("timed out") == 2
