"""`advise --run`: each candidate's step run on the local accelerator, only on request and only
when free; on a machine without one, on the CPU, and it says so."""

import pytest

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor.steps import BUSY, NO_ACCELERATOR
from jax_lsp.trace.options import TraceOptions
from tests.agent import (
    HAS_TPU,
    AgentTraceService,
    advise_fixture,
    descendants,
    needs_linux,
    tpu_lock_held,
)

pytestmark = needs_linux


def _advise(service, **request):
    return advise_fixture(
        service,
        "mlp",
        "nothing_saveable",
        run=True,
        options=TraceOptions(timeout=60),
        **request,
    )


@pytest.mark.skipif(HAS_TPU, reason="this machine has a TPU (tests/trace/test_on_tpu.py)")
def test_without_an_accelerator_the_steps_run_on_the_cpu_and_it_says_so(service):
    advice = _advise(service)
    assert advice.ok, advice.message
    assert advice.run is not None and (advice.run.platform, advice.run.note) == ("cpu", NO_ACCELERATOR)
    assert len(advice.policies) == 2
    for entry in advice.policies:
        assert entry.run is not None and entry.run.error is None
        assert entry.run.runs == 5 and 0 < entry.run.step_s < 5
        assert entry.run.peak_bytes_in_use is None  # the CPU keeps no memory statistics
    table = advice_table(advice, None, None)
    header = next(line for line in table.splitlines() if line.lstrip().startswith("policy"))
    assert header.endswith("  step") and f"--run: {NO_ACCELERATOR}." in table
    assert "peak in use" not in table  # as in Compare: no column where no step has a figure
    assert advice.to_contract(None)["run"] == {"platform": "cpu", "device": "cpu", "note": NO_ACCELERATOR}


def test_where_another_process_holds_the_tpu_nothing_runs_and_one_line_says_so(libtpu_python):
    """The run's agent starts JAX with the user's environment: libtpu refuses the chip another
    process holds, and the answer is one line beside the compiled and estimated figures."""
    before = descendants()
    service = AgentTraceService()
    try:
        with tpu_lock_held():
            advice = _advise(service, interpreter=libtpu_python, compile=True)
    finally:
        service.shutdown()
    assert descendants() <= before  # both agents and their children are gone
    assert advice.ok, advice.message
    assert advice.run is not None and advice.run.note == BUSY
    assert all(p.run is None and p.compiled is not None and p.peak_bytes for p in advice.policies)
    table = advice_table(advice, None, None)
    header = table.splitlines()[1].replace("step (est.)", "")  # the predicted step stays
    assert f"--run: {BUSY}." in table and "step" not in header
    assert "lockfile" not in table and "Traceback" not in table


@pytest.mark.skipif(HAS_TPU, reason="this machine has a TPU (tests/trace/test_on_tpu.py)")
def test_a_run_after_the_compiles_loads_the_executables_they_kept(service, tmp_path, monkeypatch):
    """With the compiles, the run loads each candidate's executable instead of compiling the
    step again; without them, it compiles. The folder they were kept in is gone afterwards."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the host makes the folder
    compiled = _advise(service, compile=True)
    assert compiled.ok, compiled.message
    assert all(p.compiled is not None for p in compiled.policies)
    assert all(p.run is not None and p.run.loaded and p.run.step_s for p in compiled.policies)
    run_alone = _advise(service)
    assert all(p.run is not None and not p.run.loaded and p.run.step_s for p in run_alone.policies)
    assert list(tmp_path.iterdir()) == []
