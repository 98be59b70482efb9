"""Under the new remat (`jax_remat3`) the advisor compares no policies (status `unsupported`) but
still reports the names of the site's policy that the new remat ignores (`no_effect` reason
`new_remat`), decided in the agent by JAX's `saved_residuals` and checked here against JAX's
own residuals of the fixture's checkpoint under both remats."""

from __future__ import annotations

import pytest

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor.request import advise
from tests.agent import ADVISOR_FIXTURES, AGENT_FACTS, line_of, skip_unless_agent_runs_this_jax

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")

FIXTURE = ADVISOR_FIXTURES / "new_remat.py"

needs_remat3 = pytest.mark.skipif(AGENT_FACTS.remat3 is None, reason="this JAX has no jax_remat3")


@pytest.fixture(scope="module")
def advice(service):
    return advise(
        service, FIXTURE, line_of(FIXTURE), example="new_remat.py:example", root=str(ADVISOR_FIXTURES)
    )


def _ignores_callables():
    return {"callable", "save_from_both_policies"} <= AGENT_FACTS.remat3.ignored


@needs_remat3
def test_under_the_new_remat_the_advice_is_unsupported_with_the_ignored_names(advice):
    assert advice.status == "unsupported"
    assert "jax_remat3" in advice.message
    found = {(n.name, n.role, n.reason) for n in advice.current.no_effect}
    # 'y' is tagged nowhere: it changes nothing under either remat, and is no new_remat entry
    assert found == ({("x", "saved", "new_remat")} if _ignores_callables() else set())
    table = advice_table(advice, ADVISOR_FIXTURES)
    if _ignores_callables():
        assert "'x' (saved): ignored under jax_remat3 on this release" in table


@pytest.fixture
def layer(monkeypatch):
    """The fixture's checkpointed function, imported here with jax_remat3 left as it was."""
    from jax._src import config

    monkeypatch.syspath_prepend(str(ADVISOR_FIXTURES))
    before = config.remat3.value
    try:
        import new_remat
    finally:
        jax.config.update("jax_remat3", before)
    return new_remat.layer


def _residuals(layer, remat3, names):
    """JAX's residuals of ``layer`` checkpointed with the fixture's policy listing ``names``."""
    from jax._src import config
    from jax._src.ad_checkpoint import saved_residuals

    policies = jax.checkpoint_policies
    policy = policies.save_from_both_policies(policies.dots_saveable, policies.save_only_these_names(*names))
    shape = jax.ShapeDtypeStruct((8, 8), jax.numpy.float32)
    with config.remat3(remat3):
        block = jax.checkpoint(layer, policy=policy)
        return sorted(str(aval) for aval, _ in saved_residuals(block, shape, shape))


@needs_remat3
def test_a_new_remat_entry_changes_nothing_under_the_new_remat_and_something_under_the_old(advice, layer):
    skip_unless_agent_runs_this_jax()
    reported = {n.name for n in advice.current.no_effect}
    for name in ("x", "y"):
        without = [n for n in ("x", "y") if n != name]
        ignored = _residuals(layer, True, ["x", "y"]) == _residuals(layer, True, without)
        classic_changes = _residuals(layer, False, ["x", "y"]) != _residuals(layer, False, without)
        assert (name in reported) == (ignored and classic_changes), name


LOADED = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

policies = jax.checkpoint_policies


def layer(h, w):
    h = checkpoint_name(jnp.sin(h @ w), "x")
    return jnp.sum(jnp.cos(h @ w))


block = jax.checkpoint(layer, policy=policies.save_from_both_policies(policies.dots_saveable, {inner}))


def example():
    return jax.ShapeDtypeStruct((8, 8), jnp.float32), jax.ShapeDtypeStruct((8, 8), jnp.float32)
"""


@needs_remat3
@pytest.mark.parametrize(
    "inner", ["policies.save_only_these_names('x')", "policies.save_only_these_names('y')"]
)
def test_a_checkpoint_made_as_the_module_loads_under_jax_remat3_from_the_environment(
    tmp_path, monkeypatch, inner
):
    """JAX_REMAT3 set: the module's checkpoint is the new remat's from the start; a name that is
    kept under the new remat by a name policy is `new_remat`, one tagged nowhere ('y') is not."""
    from tests.agent import AgentTraceService

    monkeypatch.setenv("JAX_REMAT3", "1")
    path = tmp_path / "loaded.py"
    path.write_text(LOADED.format(inner=inner).lstrip(), encoding="utf-8")
    service = AgentTraceService()
    try:
        advice = advise(service, path, line_of(path), example="loaded.py:example", root=str(tmp_path))
    finally:
        service.shutdown()
    assert advice.status == "unsupported", advice.message
    expected = {("x", "new_remat")} if "'x'" in inner and _ignores_callables() else set()
    assert {(n.name, n.reason) for n in advice.current.no_effect} == expected
