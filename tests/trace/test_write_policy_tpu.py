"""`--write-policy` for a TPU target, compiled from this machine (libtpu: JAX_LSP_LIBTPU_PYTHON,
as tests/trace_agent/advisor/test_target.py): the search minimises the step time the advisor
predicts for the chip, and what it offers fits the chip's budget when compiled."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.write.writing import write_policy
from jax_lsp.trace.advisor.write.written import WRITTEN
from jax_lsp.trace.compile_target import parse_target
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, AgentTraceService, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX, with libtpu

NAMED = "jax.checkpoint_policies."


def test_on_a_tpu_the_written_policy_is_chosen_by_its_predicted_step(
    libtpu_python: str, tmp_path: Path
) -> None:
    shutil.copy(ADVISOR_FIXTURES / "write_stack.py", tmp_path)
    path = tmp_path / "write_stack.py"
    target = parse_target("v5e-1", "--target")
    request = {
        "example": "write_stack.py:example",
        "root": tmp_path,
        "cwd": tmp_path,
        "interpreter": libtpu_python,
        "options": TraceOptions(timeout=300),
        "target": target,
    }
    service = AgentTraceService()
    try:
        advice = advise(service, path, line_of(path), compile=True, **request)
        assert advice.ok and advice.on_tpu, advice.message
        sizes = {p.policy: advice.budgeted_bytes(p) for p in advice.policies if p.compiled is not None}
        low = sizes[f"{NAMED}save_only_these_names('down')"]
        high = sizes[f"{NAMED}dots_saveable"]
        assert low is not None and high is not None and low < high
        budget = (low + high) // 2
        outcome = write_policy(service, Workspace([tmp_path]), advice, budget, **request)
    finally:
        service.shutdown()
    assert outcome.cost is not None and outcome.cost.objective == "predicted step time"
    if outcome.verdict == WRITTEN:
        entry, named = outcome.entry, outcome.named
        assert entry is not None and (advice.budgeted_bytes(entry) or budget + 1) <= budget
        assert outcome.step_estimate_s is not None
        if named is not None:  # faster beyond the model's stated error
            theirs = step_time.ranked_seconds(target, named)
            assert theirs is not None and outcome.step_estimate_s < theirs
            error = step_time.chip_for("v5e").error
            assert not step_time.tie(outcome.step_estimate_s, theirs, error)
            assert "a step against" in outcome.message
    else:  # none is faster beyond the error: the named one is said, with no edit
        assert outcome.named is not None and outcome.edits == () and "use " in outcome.message
