"""`jax-lsp advise`: the JSON contract, the table, Markdown, --budget, exit codes, examples
from a comment or pyproject.toml, and no process left behind."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from jax_lsp.cli import main
from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor.advice import Advice, PolicyAdvice, Residual, parse_size
from jax_lsp.trace.advisor.report import format_markdown
from tests.agent import ADVISOR_FIXTURES, descendants, line_of

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

MLP = ADVISOR_FIXTURES / "mlp.py"
TOP = {"target", "jax", "platform", "policies", "suggested"}
NUMBERS = {"device_bytes", "host_bytes", "argument_bytes", "computed_bytes", "recompute_flops"}
POLICY = {"policy", "current", "residuals", *NUMBERS}
RESIDUAL = {"shape", "dtype", "bytes", "memory", "kind", "name", "path", "line", "iterations"}


def _json(capsys, *argv):
    code = main(["advise", *argv, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def test_the_json_contract(capsys):
    line = line_of(MLP)
    code, data = _json(
        capsys,
        f"{MLP}:{line}",
        "--example",
        "mlp.py:example",
        "--root",
        str(ADVISOR_FIXTURES),
        "--budget",
        "5600B",
    )
    assert code == 0
    assert set(data) == TOP
    assert data["target"] == {"path": "mlp.py", "line": line}
    assert data["jax"] == __import__("jax").__version__
    assert data["platform"] == "cpu"
    assert [p["current"] for p in data["policies"]].count(True) == 1
    for entry in data["policies"]:
        assert set(entry) == POLICY
        assert isinstance(entry["policy"], str) and isinstance(entry["current"], bool)
        assert all(_is_int(entry[k]) for k in NUMBERS)
        on_device = [r for r in entry["residuals"] if r["memory"] == "device"]
        assert entry["device_bytes"] == sum(r["bytes"] for r in on_device)
        assert entry["host_bytes"] == sum(r["bytes"] for r in entry["residuals"] if r["memory"] == "host")
        assert entry["computed_bytes"] == sum(r["bytes"] for r in on_device if r["kind"] == "computed")
        assert entry["argument_bytes"] + entry["computed_bytes"] == entry["device_bytes"]
        for residual in entry["residuals"]:
            assert set(residual) == RESIDUAL
            assert all(_is_int(d) for d in residual["shape"]) and _is_int(residual["bytes"])
            assert residual["memory"] in ("device", "host")
            assert residual["kind"] in ("argument", "constant", "literal", "computed")
            assert residual["name"] is None or isinstance(residual["name"], str)
            if residual["kind"] == "computed":
                assert residual["path"] == "mlp.py" and _is_int(residual["line"])
            assert residual["iterations"] is None
    suggested = data["suggested"]
    assert set(suggested) == {"policy", "budget", *NUMBERS}
    assert suggested["budget"] == 5600 and suggested["computed_bytes"] <= 5600
    fitting = [p for p in data["policies"] if p["computed_bytes"] <= 5600]
    assert suggested["recompute_flops"] == min(p["recompute_flops"] for p in fitting)
    # the budget is what the policy keeps: the arguments (4.5 KiB here) do not count against it
    assert any(p["device_bytes"] > 5600 for p in fitting)


def test_a_budget_no_policy_fits_exits_1(capsys):
    site = f"{MLP}:{line_of(MLP)}"
    code, data = _json(
        capsys, site, "--example", "mlp.py:example", "--policies", "everything_saveable", "--budget", "1B"
    )
    assert code == 1 and data["suggested"] is None
    assert all(p["computed_bytes"] > 1 for p in data["policies"])


def test_a_site_that_cannot_be_advised_exits_2_with_its_error(capsys):
    code, data = _json(capsys, f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:nowhere")
    assert code == 2
    assert data["policies"] == [] and data["error"]["status"] == "example_error"


def test_chosen_policies_and_the_table(capsys):
    code = main(
        [
            "advise",
            f"{MLP}:{line_of(MLP)}",
            "--example",
            "mlp.py:example",
            "--policies",
            "nothing_saveable",
            "--policies",
            "save_only_these_names('h')",
            "--budget",
            "24GiB",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    rows = [
        row for row in out.splitlines() if ("saveable" in row or "names(" in row) and "policy=" not in row
    ]
    assert len(rows) == 3  # the current policy and the two asked for
    assert rows[0].startswith("*") and "dots_saveable" in rows[0]
    assert "The current policy keeps" in out and "f32[8,32]" in out
    assert "policy=jax.checkpoint_policies.dots_saveable" in out


def test_markdown(capsys):
    code = main(
        ["advise", f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example", "--output-format", "markdown"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "| | policy | saves | computed | arguments | host | recompute |" in out
    assert "| current | `dots_saveable` |" in out
    assert "not XLA's peak memory" in out


def test_every_site_of_a_file_from_a_comment_and_from_pyproject(tmp_path, capsys):
    shutil.copy(MLP, tmp_path / "mlp.py")
    text = (tmp_path / "mlp.py").read_text()
    text = text.replace("dots_saveable)\n", "dots_saveable)  # jax-lsp: example=mlp.py:example\n", 1)
    text += "\n\nother = jax.checkpoint(mlp, policy=jax.checkpoint_policies.nothing_saveable)\n"
    (tmp_path / "mlp.py").write_text(text)
    line = line_of(tmp_path / "mlp.py", "other = ")
    (tmp_path / "pyproject.toml").write_text(f'[tool.jax-lsp.examples]\n"mlp.py:{line}" = "mlp.py:example"\n')
    code, data = _json(capsys, str(tmp_path / "mlp.py"))
    assert code == 0, data
    assert [d["target"]["line"] for d in data] == [line_of(tmp_path / "mlp.py"), line]
    assert all(d["policies"] for d in data)


def test_bad_options(capsys):
    assert main(["advise", f"{MLP}:1", "--budget", "lots"]) == 2
    assert "--budget" in capsys.readouterr().err
    assert main(["advise", "no/such/file.py:3"]) == 2


def _entry(policy, computed, flops, error=None, host=0):
    """A policy entry keeping ``computed`` bytes on the device and ``host`` offloaded, beside
    100 bytes of arguments."""

    def residual(size, memory, kind):
        return Residual((size,), "uint8", size, memory, kind, None, None, None, None, kind)

    kept = [residual(100, "device", "argument"), residual(computed, "device", "computed")]
    kept += [residual(host, "host", "computed")] if host else []
    return PolicyAdvice(policy, False, 100 + computed, host, flops, () if error else tuple(kept), error)


def _advice(*policies):
    return Advice("ok", "", "m.py", 3, policies=policies)


def test_the_suggestion_least_recompute_whose_computed_bytes_fit_then_name_based():
    advice = _advice(
        _entry("jax.checkpoint_policies.everything_saveable", 900, 0),
        _entry("jax.checkpoint_policies.dots_saveable", 500, 10),
        _entry("jax.checkpoint_policies.save_only_these_names('h')", 600, 10),
        _entry("jax.checkpoint_policies.nothing_saveable", 100, 50),
        _entry("broken", 0, 0, error="TypeError"),
    )
    assert advice.suggest(1000).policy.endswith("everything_saveable")
    assert advice.suggest(900).policy.endswith("everything_saveable")  # the arguments do not count
    assert advice.suggest(800).policy.endswith("save_only_these_names('h')")
    assert advice.suggest(550).policy.endswith("dots_saveable")
    assert advice.suggest(100).policy.endswith("nothing_saveable")
    assert advice.suggest(99) is None


def test_on_a_tie_keeping_everything_on_the_device_wins_over_offloading():
    offload = _entry(
        "jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'pinned_host')", 0, 0, host=500
    )
    named_offload = _entry(
        "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], "
        "names_which_can_be_offloaded=['h'], offload_src='device', offload_dst='pinned_host')",
        0,
        0,
        host=500,
    )
    dots = _entry("jax.checkpoint_policies.dots_saveable", 500, 0)
    everything = _entry("jax.checkpoint_policies.everything_saveable", 700, 0)
    named = _entry("jax.checkpoint_policies.save_only_these_names('h')", 600, 0)
    # fewer computed bytes and name-based do not beat keeping everything on the device
    assert _advice(offload, named_offload, everything, dots).suggest(1000) is dots
    # among on-device policies: name-based first, then the fewest computed bytes
    assert _advice(offload, everything, dots, named).suggest(1000) is named
    # when only offloading fits, it is suggested
    assert _advice(offload, dots).suggest(100) is offload
    # less recompute still comes first
    assert (
        _advice(_entry("jax.checkpoint_policies.nothing_saveable", 0, 10), offload).suggest(1000) is offload
    )


def test_a_rejected_candidate_has_no_numbers_and_its_error_below_the_table():
    error = "TypeError: " + "the remat policy returned None, not a bool " * 10
    advice = _advice(
        _entry("jax.checkpoint_policies.nothing_saveable", 0, 50),
        _entry("broken", 0, 0, error=error + "\nsecond line"),
    )
    assert advice.suggest(10**9).policy.endswith("nothing_saveable")
    entry = advice.to_contract(None)["policies"][1]
    assert entry["error"].startswith("TypeError") and entry["residuals"] == []
    assert all(entry[key] is None for key in NUMBERS)
    for text in (advice_table(advice, None), format_markdown(advice, None)):
        [row] = [line for line in text.splitlines() if "broken" in line and "TypeError" not in line]
        assert row.replace("|", " ").split()[-5:] == ["-"] * 5
        [below] = [line for line in text.splitlines() if "TypeError" in line]
        assert "broken: TypeError: the remat policy returned None" in below
        assert len(below) < 120 and below.endswith("…") and "second line" not in text
        assert text.index(row) < text.index("Rejected by JAX") < text.index(below)


def test_sizes():
    assert parse_size("24GiB") == 24 * 2**30
    assert parse_size("600000B") == 600000
    assert parse_size("1.5 GB") == 1_500_000_000
    assert parse_size("4096") == 4096
    with pytest.raises(ValueError):
        parse_size("24 gigs")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_no_process_is_left_behind(tmp_path, capsys):
    before = descendants()
    assert main(["advise", f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example"]) == 0
    path = tmp_path / "loop.py"
    path.write_text(
        "import jax\n\nblock = jax.checkpoint(lambda x: x, policy=None)\n\n\n"
        "def example():\n    while True:\n        pass\n"
    )
    started = time.monotonic()
    assert main(["advise", f"{path}:3", "--example", "loop.py:example", "--timeout", "2"]) == 2
    assert time.monotonic() - started < 30
    assert "timeout" in capsys.readouterr().out
    deadline = time.monotonic() + 10
    while descendants() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants() <= before


def test_nothing_runs_without_a_request():
    """Importing the CLI, the host side and the server's modules starts no agent."""
    before = descendants()
    import jax_lsp.cli.commands.advise  # noqa: F401
    import jax_lsp.trace.advisor.request  # noqa: F401

    assert descendants() == before


def test_the_root_defaults_to_the_project(capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "pkg").mkdir()
    shutil.copy(MLP, tmp_path / "pkg" / "mlp.py")
    path = Path(tmp_path / "pkg" / "mlp.py")
    code, data = _json(capsys, f"{path}:{line_of(path)}", "--example", "pkg/mlp.py:example")
    assert code == 0, data
    assert data["target"]["path"] == "pkg/mlp.py"


def test_the_line_of_a_checkpointed_def_advises_its_site(capsys):
    code, data = _json(capsys, f"{MLP}:{line_of(MLP, 'def mlp(')}", "--example", "mlp.py:example")
    assert code == 0
    assert data["target"]["line"] == line_of(MLP)
