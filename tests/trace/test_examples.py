"""Every INVALID example of the rules is confirmed by a trace; every VALID one traces clean."""

import pytest

from jax_lsp.engine import Workspace
from jax_lsp.rules import ALL_RULES
from jax_lsp.trace.locations import policy_anchors
from jax_lsp.trace.mapping import trace_notes
from tests.agent import AGENT_FACTS, AGENT_PYTHON
from tests.jax_premises import missing_premise, not_installed

CASES = [
    pytest.param(rule, kind, example, id=f"{rule.code}-{kind}-{i}")
    for rule in ALL_RULES
    for kind in ("INVALID", "VALID")
    for i, example in enumerate(getattr(rule, kind))
]


def _trace_sites(service, tmp_path, code, traceable=True):
    path = tmp_path / "example.py"
    path.write_text(code, encoding="utf-8")
    workspace = Workspace([tmp_path])
    static = workspace.check_file(str(path))
    sites = [a for a in policy_anchors(workspace, str(path)) if a.kind == "site"]
    # A rule that no trace can confirm (static_argnums, JAX117) may have examples without a policy.
    assert sites or not traceable, "every example passes a policy somewhere"
    results = [service.trace(path, a.line, a.column, root=tmp_path) for a in sites]
    notes = [n for r in results for n in trace_notes(r, static)]
    return results, notes


@pytest.mark.parametrize("rule, kind, example", CASES)
def test_example(service, tmp_path, rule, kind, example, request):
    missing = not_installed(example.code, AGENT_PYTHON)
    if missing:
        pytest.skip(f"{AGENT_PYTHON} lacks {', '.join(missing)}")
    premise = missing_premise(rule.code, kind, example, example.code, AGENT_FACTS, traced=True)
    if premise:
        request.applymarker(pytest.mark.xfail(reason=premise, strict=True))
    results, notes = _trace_sites(service, tmp_path, example.code, rule.traceable)
    if kind == "INVALID" and not rule.traceable:
        # The mistake is in the model, or silent where the probe cannot see it: the trace need not
        # show it, but must not contradict it. What it does see (a list of names that raises when
        # the module is loaded, JAX116) confirms the rule.
        if any(r.status != "ok" for r in results):
            confirmed = {n.span.start.line + 1 for n in notes if n.confirms == rule.code}
            assert set(example.lines) <= confirmed, [r.message for r in results]
        assert not [n for n in notes if n.code == "JAX190"]
    elif kind == "INVALID":
        confirmed = {n.span.start.line + 1 for n in notes if n.confirms == rule.code}
        assert set(example.lines) <= confirmed, [(n.span.start.line + 1, n.code, n.message) for n in notes]
        assert not [n for n in notes if n.code == "JAX190"]
    else:
        assert [r.status for r in results] == ["ok"] * len(results), [r.message for r in results]
        assert [n for n in notes if n.severity != "information"] == []
