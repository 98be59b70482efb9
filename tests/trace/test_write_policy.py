"""`advise --write-policy` on a scanned stack whose values mostly carry no `checkpoint_name`
(tests/fixtures/advisor/write_stack.py), compiled for the local CPU: the written policy fits
when compiled, beats the best named candidate that fits or says it does not, and its edits,
applied to the file, trace clean and compile to the figures it showed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from jax_lsp.core.codes import NO_EFFECT, UNPREDICTED
from jax_lsp.core.text.edits import apply_edits
from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.write.writing import write_policy
from jax_lsp.trace.advisor.write.written import NAMED, NONE_FITS, WRITTEN, WrittenPolicy
from jax_lsp.trace.mapping import trace_notes
from tests.agent import ADVISOR_FIXTURES, AgentTraceService, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

KiB = 1024
FIXTURE = "write_stack.py"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("write")
    shutil.copy(ADVISOR_FIXTURES / FIXTURE, root / FIXTURE)
    return root


@pytest.fixture(scope="module")
def agent():
    service = AgentTraceService()
    yield service
    service.shutdown()


def request_of(root: Path) -> dict[str, Any]:
    return {"example": f"{FIXTURE}:example", "root": root, "cwd": root}


@pytest.fixture(scope="module")
def advised(project: Path, agent: AgentTraceService) -> Advice:
    path = project / FIXTURE
    advice = advise(agent, path, line_of(path), compile=True, **request_of(project))
    assert advice.ok, advice.message
    return advice


def written(agent: AgentTraceService, project: Path, advice: Advice, budget: int) -> WrittenPolicy:
    return write_policy(agent, Workspace([project]), advice, budget, **request_of(project))


def sizes(advice: Advice) -> dict[str, int]:
    """The named candidates' compiled temporaries, by policy."""
    return {p.policy: p.compiled.temp_bytes for p in advice.policies if p.compiled is not None}


def test_a_written_policy_fits_beats_the_named_and_its_edit_holds(
    project: Path, agent: AgentTraceService, advised: Advice
) -> None:
    named = sizes(advised)
    dots = named["jax.checkpoint_policies.dots_saveable"]
    down = named["jax.checkpoint_policies.save_only_these_names('down')"]
    # three quarters of the way from keeping one named value to keeping every matmul: room for one
    # more matmul's output (XLA:CPU's figure for it differs by release: 8.38 MiB on jax 0.10,
    # 8.94 MiB on 0.4.30, beside 4.9 and 12.8 MiB)
    budget = down + 3 * (dots - down) // 4
    outcome = written(agent, project, advised, budget)
    assert outcome.verdict == WRITTEN, outcome.message
    entry = outcome.entry
    assert entry is not None and entry.compiled is not None
    assert entry.compiled.temp_bytes <= budget  # it fits, compiled with its tags
    best_named = min(
        (p for p in advised.policies if p.compiled is not None and p.compiled.temp_bytes <= budget),
        key=lambda p: p.recompute_flops or 0,
    )
    assert outcome.named == best_named
    assert (entry.recompute_flops or 0) < (best_named.recompute_flops or 0)
    assert outcome.cost is not None and 1 <= outcome.cost.compiles <= 4
    assert {t.name for t in outcome.tags} <= set(entry.policy.split("'"))  # it names what it tags

    # applied to the file: it traces clean and compiles to the figures shown
    path = project / FIXTURE
    text = path.read_text(encoding="utf-8")
    edited = apply_edits(text, outcome.edits)
    assert edited != text and "checkpoint_name(" in edited and entry.policy in edited
    path.write_text(edited, encoding="utf-8")
    try:
        line = line_of(path, "policy=")
        again = advise(agent, path, line, compile=True, policies=[entry.policy], **request_of(project))
        assert again.ok, again.message
        current = again.current
        assert current is not None and current.compiled is not None
        assert current.compiled.temp_bytes == entry.compiled.temp_bytes
        assert current.recompute_flops == entry.recompute_flops
        assert current.no_effect == ()  # every name it lists changes what is kept (no JAX191)
        result = agent.trace(path, line, root=project)
        codes = {note.code for note in trace_notes(result)}
        assert UNPREDICTED not in codes and NO_EFFECT not in codes
    finally:
        path.write_text(text, encoding="utf-8")


def test_where_no_written_policy_is_better_the_named_one_is_suggested(
    project: Path, agent: AgentTraceService, advised: Advice
) -> None:
    down = sizes(advised)["jax.checkpoint_policies.save_only_these_names('down')"]
    outcome = written(agent, project, advised, down + 4 * KiB)  # room for the one named value only
    assert outcome.verdict == NAMED, outcome.message
    assert outcome.entry is None and outcome.edits == ()
    assert outcome.named is not None
    assert outcome.named.policy == "jax.checkpoint_policies.save_only_these_names('down')"
    assert "use save_only_these_names('down')" in outcome.message


def test_where_nothing_fits_it_says_by_how_much_the_smallest_misses(
    project: Path, agent: AgentTraceService, advised: Advice
) -> None:
    smallest = min(sizes(advised).values())
    outcome = written(agent, project, advised, smallest - 100 * KiB)
    assert outcome.verdict == NONE_FITS
    assert outcome.missed_by is not None and 0 < outcome.missed_by <= 100 * KiB
    assert outcome.smallest is not None and "more" in outcome.message
