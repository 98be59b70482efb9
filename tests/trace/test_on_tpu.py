"""On a TPU machine (marked `tpu`, skipped elsewhere; run through the device tool, see
docs/accelerators.md): trace and advise answer with the defaults, beside a process that holds the
chip and computes too, and `advise --run` runs the candidates on the chip when it is free."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.steps import BUSY
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, AgentTraceService, invalid_value_text, line_of, needs_tpu

pytestmark = [pytest.mark.tpu, needs_tpu]

EXAMPLES = Path(__file__).parents[2] / "examples"
# A training job's stand-in: it holds the chip and computes, writing its step count to a file,
# until its stdin closes. The count is replaced whole (`os.replace`): a file rewritten in place
# reads empty while it is truncated, often enough at a step of a fraction of a millisecond to
# count 0 steps before and after.
HOLDER = """
import os, sys, threading
import jax, jax.numpy as jnp
x = jnp.ones((2048, 2048))
print(jax.devices()[0].platform, flush=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
steps = 0
while not done.is_set():
    x = jnp.tanh(x @ x); x.block_until_ready(); steps += 1
    with open(sys.argv[1] + ".new", "w") as counter:
        counter.write(str(steps))
    os.replace(sys.argv[1] + ".new", sys.argv[1])
"""


class ChipHolder:
    """A process that holds the TPU and computes; `steps()` counts the steps it has done."""

    def __init__(self, counter: Path):
        self.counter = counter
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(counter)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "tpu"

    def steps(self) -> int:
        time.sleep(0.5)
        try:
            return int(self.counter.read_text() or 0)
        except (OSError, ValueError):
            return 0

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def holder(tmp_path):
    held = ChipHolder(tmp_path / "steps")
    yield held
    held.stop()


def _trace_examples():
    """A broken example and a valid policy, each traced cold (a new agent): (result, seconds)."""
    found = {}
    for path, needle in (
        (EXAMPLES / "jax101_policy_returns_none.py", "def policy"),
        (ADVISOR_FIXTURES / "mlp.py", "policy="),
    ):
        service = AgentTraceService()
        started = time.monotonic()
        try:
            result = service.trace(path, line_of(path, needle))
        finally:
            service.shutdown()
        found[path.name] = (result, time.monotonic() - started)
    return found


def _check_examples(found):
    broken, seconds = found["jax101_policy_returns_none.py"]
    assert broken.status == "jax_error" and invalid_value_text() in broken.message, broken.message
    assert broken.platform == "cpu" and seconds < 20
    valid, valid_seconds = found["mlp.py"]
    assert valid.ok and valid.error is None and not valid.rejected, valid.message
    assert valid_seconds < 20
    print(
        f"cold traces: jax101 {seconds:.1f} s ({broken.status}), mlp {valid_seconds:.1f} s ({valid.status})"
    )


def _advise_every_candidate(service, **request):
    path = ADVISOR_FIXTURES / "mlp.py"
    advice = advise(service, path, line_of(path), example="mlp.py:example", root=ADVISOR_FIXTURES, **request)
    assert advice.ok, advice.message
    assert len(advice.policies) >= 5 and all(p.error is None and p.peak_bytes for p in advice.policies)
    return advice


def test_the_examples_trace_cold_with_the_defaults():
    _check_examples(_trace_examples())


def test_advise_answers_every_candidate_and_runs_them_on_the_free_chip(service):
    advice = _advise_every_candidate(service, run=True, compile=True, options=TraceOptions(timeout=120))
    assert advice.run is not None and advice.run.platform == "tpu" and advice.run.note is None
    for entry in advice.policies:
        assert entry.compiled is not None
        assert entry.run is not None and entry.run.error is None, entry.run
        assert entry.run.step_s and (entry.run.peak_bytes_in_use or entry.run.peak_bytes_at_most)
        print(
            f"{entry.policy}: step {entry.run.step_s * 1e3:.3f} ms, peak in use {entry.run.peak_bytes_in_use}"
            f" (at most {entry.run.peak_bytes_at_most}), compiled peak {entry.compiled.peak_bytes}"
        )
    # the steps ran smallest compiled peak first: the first raised the device's mark
    assert any(p.run.peak_bytes_in_use for p in advice.policies)


def test_beside_a_process_that_holds_the_chip_and_computes(holder):
    before = holder.steps()
    _check_examples(_trace_examples())
    service = AgentTraceService()
    try:
        advice = _advise_every_candidate(service, run=True, options=TraceOptions(timeout=120))
    finally:
        service.shutdown()
    assert advice.run is not None and advice.run.note == BUSY
    assert all(p.run is None for p in advice.policies)
    assert holder.steps() > before  # it kept computing
