"""The editor's suggestion and Compare view with compiled and measured figures, over real LSP:
a budget's quick fix is checked by compiling (as `advise --budget`), and the steps run by
`jax-lsp.runPolicies` (here on the CPU) are shown in the view both editors render."""

from __future__ import annotations

import pytest

from jax_lsp.trace.advisor.sizes import format_bytes, parse_size
from tests.agent import ADVISOR_FIXTURES, needs_linux
from tests.server.features.test_advisor import (
    COMPARE,
    RUN,
    _advise_lenses,
    _execute,
    _mlp,
    _model,
    _quick_fixes,
)
from tests.server.lsp_harness import until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

ADVISE = "jax-lsp.advisePolicy"
BUDGET = "40KiB"  # between the scanned stack's estimated and compiled peaks (test_advise_fit.py)


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_the_budgets_quick_fix_suggests_only_what_fits_compiled(server, tmp_path):
    text = (ADVISOR_FIXTURES / "scan_stack.py").read_text(encoding="utf-8")
    text = text.replace(
        "policy=save_matmuls)", "policy=save_matmuls)  # jax-lsp: example=scan_stack.py:example"
    )
    budget = parse_size(BUDGET)
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": BUDGET}}) as session:
        uri = session.write("scan_stack.py", text)
        session.open("scan_stack.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        result = await _execute(session, ADVISE, lens.command.arguments)
        least = min(p["recompute_flops"] for p in result["policies"])
        # the premise: by its estimate a policy that recomputes least fits; compiled, none does
        assert any(p["peak_bytes"] <= budget for p in result["policies"] if p["recompute_flops"] == least)
        checked = [p for p in result["policies"] if p.get("compiled")]
        assert all(p["compiled"]["temp_bytes"] > budget for p in checked if p["recompute_flops"] == least)
        suggested = result["suggested"]
        assert suggested["compiled"]["temp_bytes"] <= budget and suggested["recompute_flops"] > least

        [action] = await _quick_fixes(session, uri, text, "save_matmuls)")
        temp = format_bytes(suggested["compiled"]["temp_bytes"])
        short = suggested["policy"].removeprefix("jax.checkpoint_policies.")
        assert (
            action.title
            == f"Use the suggested policy: {short} (compiled {temp} within the 40 KiB budget, on cpu)"
        )


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_compare_shows_the_steps_run_on_the_device(server, tmp_path):
    async with server.in_folder(tmp_path) as session:
        uri = _model(session, _mlp())
        [lens] = await until(lambda: _advise_lenses(session, uri))
        ran = await _execute(session, RUN, lens.command.arguments)
        assert ran["view"]["columns"][-1] == "step"  # the CPU counts no peak in use
        # the site keeps the run's advice: Compare shows its measured steps, as text for Neovim too
        [lens] = await until(lambda: _advise_lenses(session, uri))
        assert lens.command.command == COMPARE
        compared = await _execute(session, COMPARE, lens.command.arguments)
        view = compared["view"]
        assert view["columns"][-1] == "step"
        steps = [row["cells"][-1] for row in view["rows"]]
        assert all(step.endswith(" ms") or step.endswith(" s") for step in steps), steps
        assert [row["cells"][-1] for row in ran["view"]["rows"]] == steps
        assert "--run: no accelerator here: the steps ran on the CPU" in view["notes"]
        header = next(line for line in compared["text"].splitlines() if line.startswith("policy"))
        assert header.endswith(" step") and steps[0] in compared["text"]
