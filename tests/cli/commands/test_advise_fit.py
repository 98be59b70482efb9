"""`jax-lsp advise --budget` suggests only what fits when compiled, and its table fits a terminal.

The estimated peak of the scanned stack (tests/fixtures/advisor/scan_stack.py) is 20 to 30% under
XLA's compiled temporaries: at a budget between the two, the estimate says the policies that
recompute nothing fit, and XLA says none of them does."""

from __future__ import annotations

import json

import pytest

from jax_lsp.cli.output.advisor_table import TABLE_WIDTH
from jax_lsp.trace.advisor.sizes import parse_size
from tests.agent import ADVISOR_FIXTURES, line_of, skip_unless_agent_runs_this_jax

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

STACK = ADVISOR_FIXTURES / "scan_stack.py"
STACK_SITE = [
    f"{STACK}:{line_of(STACK)}",
    "--example",
    "scan_stack.py:example",
    "--root",
    str(ADVISOR_FIXTURES),
]
BUDGET = "40KiB"
MLP = ADVISOR_FIXTURES / "mlp.py"
MLP_SITE = [f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example", "--root", str(ADVISOR_FIXTURES)]


def _json(cli, capsys, *argv):
    code = cli(["advise", *argv, "--output-format", "json", "--timeout", "300"])
    return code, json.loads(capsys.readouterr().out)


def test_a_budget_suggests_only_a_policy_whose_compiled_step_fits(cli, capsys):
    skip_unless_agent_runs_this_jax()
    budget = parse_size(BUDGET)
    _, every = _json(cli, capsys, *STACK_SITE, "--compile")
    compiled = {p["policy"]: p for p in every["policies"]}
    least = min(p["recompute_flops"] for p in every["policies"])
    # the premise: the estimate says a policy that recomputes least fits, XLA says none does
    assert any(p["peak_bytes"] <= budget for p in every["policies"] if p["recompute_flops"] == least)
    assert all(
        p["compiled"]["temp_bytes"] > budget for p in every["policies"] if p["recompute_flops"] == least
    )

    code, data = _json(cli, capsys, *STACK_SITE, "--budget", BUDGET)
    assert code == 0
    suggested = data["suggested"]
    assert suggested["compiled"]["temp_bytes"] <= budget
    assert suggested["compiled"] == compiled[suggested["policy"]]["compiled"]
    # an offloading candidate is never ranked free: the least recompute among those on the device
    fitting = [p for p in every["policies"] if p["compiled"]["temp_bytes"] <= budget and not p["host_bytes"]]
    assert suggested["host_bytes"] == 0
    assert suggested["recompute_flops"] == min(p["recompute_flops"] for p in fitting)

    def preference(policy):
        return (policy["host_bytes"] > 0, policy["recompute_flops"])

    # it compiled what the suggestion depends on: every candidate it prefers, and no other tie
    checked = data["fit_check"]["policies"]
    assert {p["policy"] for p in data["policies"] if preference(p) < preference(suggested)} <= set(checked)
    assert all(preference(p) <= preference(suggested) for p in data["policies"] if p["policy"] in checked)
    assert data["fit_check"]["seconds"] > 0

    assert cli(["advise", *STACK_SITE, "--budget", BUDGET, "--timeout", "300"]) == 0
    out = capsys.readouterr().out
    assert f"Compiled {len(checked)} candidates to check that the suggestion fits (" in out


def test_long_policies_are_abbreviated_with_a_legend(cli, capsys):
    """A policy too long for a row of 120 characters is its abbreviation (the one Compare and the
    chart show), written in full under the table."""
    assert cli(["advise", *MLP_SITE]) == 0
    out = capsys.readouterr().out.splitlines()
    table = out[1 : out.index("(* current policy)")]
    assert all(len(row) <= TABLE_WIDTH for row in table)
    offload = "save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded"
    [row] = [row for row in table if row.split()[:3] == ["offload", "names(h,", "y)"]]
    assert "save_and_offload" not in row
    [legend] = [line for line in out if line.startswith("offload names(h, y): ")]
    assert (
        legend
        == f"offload names(h, y): {offload}=['h', 'y'], offload_src='device', offload_dst='pinned_host')"
    )
