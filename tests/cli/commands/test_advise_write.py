"""`jax-lsp advise --write-policy`: the JSON's `written_policy`, the table's row, the exit code,
and the flag's need of a budget (tests/fixtures/advisor/write_stack.py, compiled for the CPU)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.agent import ADVISOR_FIXTURES, line_of

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

KEYS = {
    "expression",
    "edits",
    "compiled",
    "step_estimate_s",
    "budget",
    "verdict",
    "message",
    "figures",
    "tags",
}
KEYS |= {"site_edit_note", "named", "missed_by_bytes", "smallest", "search"}


@pytest.fixture
def site(tmp_path: Path) -> list[str]:
    shutil.copy(ADVISOR_FIXTURES / "write_stack.py", tmp_path)
    path = tmp_path / "write_stack.py"
    return [f"{path}:{line_of(path)}", "--example", "write_stack.py:example", "--root", str(tmp_path)]


def test_the_written_policy_is_in_the_json_and_a_row_of_the_table(cli, capsys, site) -> None:
    code = cli(
        ["advise", *site, "--budget", "9MiB", "--write-policy", "--output-format", "json", "--timeout", "300"]
    )
    data = json.loads(capsys.readouterr().out)
    written = data["written_policy"]
    assert code == 0 and set(written) == KEYS
    assert written["verdict"] == "written" and written["compiled"]["temp_bytes"] <= 9 * 2**20
    assert written["expression"].startswith("jax.checkpoint_policies.save_only_these_names(")
    assert all(policy["compiled"] is not None for policy in data["policies"])  # every named one compiled
    edits = {(e["path"], e["start"]["line"]) for e in written["edits"]}
    assert ("write_stack.py", data["target"]["line"]) in edits  # the site's policy, and the tags
    assert written["tags"] and all((t["path"], t["line"]) in edits for t in written["tags"])

    assert cli(["advise", *site, "--budget", "9MiB", "--write-policy", "--timeout", "300"]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("written for 9 MiB "))
    header, row = lines[at - 1], lines[at]
    assert header.split()[:3] == ["policy", "saves", "computed"] and "MFLOP" in row
    assert len(row) == len(header)  # its cells under the table's columns
    assert f"written for 9 MiB: {written['expression']}" in table


def test_write_policy_needs_a_budget(cli, capsys, site) -> None:
    assert cli(["advise", *site, "--write-policy"]) == 2
    assert "--write-policy needs --budget" in capsys.readouterr().err


def test_a_json_without_the_flag_has_no_written_policy(cli, capsys, site) -> None:
    assert cli(["advise", *site, "--output-format", "json"]) == 0
    assert "written_policy" not in json.loads(capsys.readouterr().out)
