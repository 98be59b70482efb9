"""The advisor when its settings change (real LSP, real agent): a new `advise.budget` advises the
advised sites again, from what is known, under a progress, and the quick fix follows."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from lsprotocol import types

from tests.agent import needs_linux
from tests.server.features.test_advisor import (
    COMPARE,
    _execute,
    _hover,
    _mlp,
    _open_and_advise,
    _quick_fixes,
    _until_title,
)
from tests.server.lsp_harness import until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

SITE = "jax.checkpoint_policies.everything_saveable"


def _configure(session, settings):
    session.client.set_configuration(settings, section="jax-lsp")
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"jax-lsp": settings})
    )


def _progress(session):
    """Every message the server's progress reports said (begun and reported)."""
    reports = session.client.progress_reports.values()
    return [r.message or "" for found in reports for r in found if r.kind in ("begin", "report")]


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_setting_the_budget_advises_again_and_offers_the_quick_fix(server, tmp_path):
    """Advised without a budget: no suggestion, no quick fix. Setting `advise.budget` (no edit,
    no save) checks the fit for it under a progress; the quick fix is then offered, and Compare
    names the same policy. A smaller budget compiles only what the first did not."""
    text = _mlp(policy="everything_saveable")
    async with server.in_folder(tmp_path, configuration={"advise": {"target": "cpu"}}) as session:
        uri, result = await _open_and_advise(session, "mlp.py", text)
        assert result["suggested"] is None and result["fit_check"] is None
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert await _quick_fixes(session, uri, text, SITE) is None
        assert (await _execute(session, COMPARE, lens.command.arguments)).get("quick_fix") is None

        _configure(session, {"advise": {"target": "cpu", "budget": "6KiB"}})
        [action] = await until(lambda: _quick_fixes(session, uri, text, SITE), 120)
        assert action.title.startswith("Use the suggested policy: dots_saveable (compiled ")
        assert action.title.endswith(" within the 6 KiB budget, on cpu)")
        assert any(
            m.endswith(": compiling the candidates for the 6 KiB budget") for m in _progress(session)
        ), _progress(session)
        compared = await _execute(session, COMPARE, lens.command.arguments)
        assert compared["quick_fix"]["policy"] == "jax.checkpoint_policies.dots_saveable"
        assert compared["quick_fix"]["title"] == action.title
        first = compared["advice"]["fit_check"]["policies"]

        _configure(session, {"advise": {"target": "cpu", "budget": "2KiB"}})
        [smaller] = await until(lambda: _fix_within(session, uri, text, "2 KiB"), 120)
        compared = await _execute(session, COMPARE, lens.command.arguments)
        assert compared["quick_fix"]["title"] == smaller.title
        checked = compared["advice"]["fit_check"]["policies"]
        assert checked[: len(first)] == first  # what the first budget compiled is kept


async def _fix_within(session, uri, text, budget):
    found = await _quick_fixes(session, uri, text, SITE) or []
    return [a for a in found if a.title.endswith(f" within the {budget} budget, on cpu)")] or None


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_a_tpu_target_without_libtpu_is_named_in_the_lens_and_the_budget_in_the_hover(server, tmp_path):
    """`advise.target: v5e-1` where the project's Python has no libtpu: the lens says it could
    not compile for the target and why, rather than only "cpu"; the hover says what the budget
    is compared with there (the estimate's temporaries, then the CPU's compiled ones)."""
    if importlib.util.find_spec("libtpu") is not None:
        pytest.skip("this interpreter has libtpu: tests/server/features/test_advisor_target.py")
    text = _mlp(policy="everything_saveable")
    settings = {"advise": {"target": "v5e-1", "budget": "6KiB"}}
    async with server.in_folder(tmp_path, configuration=settings) as session:
        uri, result = await _open_and_advise(session, "mlp.py", text)
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert f"not compiled for v5e-1: no libtpu in {sys.executable}" in lens.command.title
        # the budget's check compiled on the CPU instead: the quick fix is offered, and says so
        [action] = await until(lambda: _fix_within(session, uri, text, "6 KiB"))
        hover = await _hover(session, uri, text, SITE)
        assert hover.startswith("**jax-lsp advice** (cpu, jax ")
        assert (
            "- the 6 KiB budget is compared with the compiled step's temporaries on cpu "
            "(not the arguments and gradients it holds anyway)" in hover
        )
