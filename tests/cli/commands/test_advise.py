"""`jax-lsp advise`: the JSON contract, the table, Markdown, --budget, exit codes, examples
from a comment or pyproject.toml, and no process left behind.

The runs trace in one warm agent (`cli`); the command's own agent, started and shut down by each
run as a user's run does, is test_no_process_is_left_behind's."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import pytest

from jax_lsp.cli import main
from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.cli.site_argument import repository_root
from jax_lsp.engine.project import project_root
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.compiled import Compiled
from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice, Residual, Select
from jax_lsp.trace.advisor.report import format_markdown, host_traffic
from jax_lsp.trace.advisor.sizes import parse_size
from tests.advisor_reference import assert_lists_what_jax_lists, reference_residuals
from tests.agent import ADVISOR_FIXTURES, AGENT_PYTHON, descendants, line_of

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

MLP = ADVISOR_FIXTURES / "mlp.py"
TOP = {"status", "message", "target", "jax", "platform", "compile_target", "policies", "suggested", "notes"}
TOP |= {
    "fit_check",
    "python",
    "names",
    "example",
    "duration_s",
    "timings",
    "selector",
    "setting",
    "setting_note",
    "user_call",
}
NUMBERS = {"device_bytes", "host_bytes", "argument_bytes", "computed_bytes", "recompute_flops", "peak_bytes"}
# what --compile adds to each entry
COMPILED = {"compiled", "estimate_error", "compile_s", "step_estimate_s", "step_estimate"}
POLICY = {"policy", "current", "residuals", "select", "same_as", "no_effect", "peak_fusible_bytes", *NUMBERS}
RESIDUAL = {"shape", "dtype", "bytes", "memory", "kind", "name", "path", "line", "iterations"}
RESIDUAL |= {"reason", "description", "used_by", "group"}


def _json(cli, capsys, *argv):
    code = cli(["advise", *argv, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _read_back(data, root, budget):
    """``data`` read into the one type and written again, as JSON."""
    advice = Advice.from_contract(data, root=root)
    return json.loads(json.dumps(advice.to_contract(root, budget)))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


MLP_SITE = [f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example", "--root", str(ADVISOR_FIXTURES)]


@pytest.fixture(scope="module")
def plotted(cli, tmp_path_factory):
    """One run for the JSON's tests and the plot's: mlp.py's site for a budget of 6000 B, its
    JSON and its trade-off plot."""
    plot = tmp_path_factory.mktemp("plot") / "tradeoff.svg"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["advise", *MLP_SITE, "--budget", "6000B", "--plot", str(plot), "--output-format", "json"])
    return code, json.loads(out.getvalue()), plot


def test_the_json_contract(plotted):
    line = line_of(MLP)
    code, data, _ = plotted
    assert code == 0
    assert set(data) == TOP
    assert data["target"] == {"path": "mlp.py", "line": line}
    assert data["jax"] == __import__("jax").__version__
    assert data["platform"] == "cpu"
    assert [p["current"] for p in data["policies"]].count(True) == 1
    checked = data["fit_check"]["policies"]  # compiled to check that the suggestion fits
    for entry in data["policies"]:
        assert set(entry) == (POLICY | COMPILED if entry["policy"] in checked else POLICY)
        assert entry["select"] is None  # a plain policy: no key chooses it
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
            assert residual["reason"] in ("argument", "named", "policy", "offloaded", "default")
            assert all(u["path"] == "mlp.py" and _is_int(u["line"]) for u in residual["used_by"])
            assert residual["group"] is None  # mlp.py makes each value once
    by_policy = {p["policy"]: p for p in data["policies"]}
    for entry in data["policies"]:
        kept = sorted((r["shape"], r["dtype"], r["memory"]) for r in entry["residuals"])
        assert entry["same_as"] == [
            p["policy"]
            for p in data["policies"]
            if p is not entry
            and sorted((r["shape"], r["dtype"], r["memory"]) for r in p["residuals"]) == kept
        ]
        assert entry["no_effect"] == []  # dots_saveable lists no name
    assert (
        "jax.checkpoint_policies.dots_with_no_batch_dims_saveable"
        in by_policy["jax.checkpoint_policies.dots_saveable"]["same_as"]
    )
    suggested = data["suggested"]
    assert set(suggested) == {
        "policy",
        "budget",
        "select",
        "setting",
        "compiled",
        "peak_fusible_bytes",
        *NUMBERS,
    }
    assert suggested["select"] is None and suggested["setting"] is None
    assert suggested["budget"] == 6000 and suggested["compiled"]["temp_bytes"] <= 6000
    fitting = [p for p in data["policies"] if p.get("compiled") and p["compiled"]["temp_bytes"] <= 6000]
    on_device = [p for p in fitting if not p["host_bytes"]]  # an offloading one is never ranked free
    assert suggested["host_bytes"] == 0
    assert suggested["recompute_flops"] == min(p["recompute_flops"] for p in on_device)
    # every candidate on the device that recomputes less was compiled, and does not fit
    assert all(
        p["compiled"]["temp_bytes"] > 6000
        for p in data["policies"]
        if p["recompute_flops"] < suggested["recompute_flops"] and not p["host_bytes"]
    )
    # the budget is the step's peak: the arguments (4.5 KiB here) do not count against it
    assert any(p["device_bytes"] > 6000 for p in fitting)


def test_the_json_reads_back_into_the_advice_it_was_written_from(plotted):
    _, data, _ = plotted
    assert _read_back(data, ADVISOR_FIXTURES, 6000) == data
    advice = Advice.from_contract(data, root=ADVISOR_FIXTURES)
    assert advice.path == str(MLP.resolve()) and advice.example == "mlp.py:example"
    assert advice.fit_check is not None and advice.fit_check.policies == tuple(data["fit_check"]["policies"])


def test_a_budget_no_policy_fits_exits_1(cli, capsys):
    site = f"{MLP}:{line_of(MLP)}"
    code, data = _json(
        cli,
        capsys,
        site,
        "--example",
        "mlp.py:example",
        "--policies",
        "everything_saveable",
        "--budget",
        "1B",
    )
    assert code == 1 and data["suggested"] is None
    assert all(p["peak_bytes"] > 1 for p in data["policies"])


def test_a_site_that_cannot_be_advised_exits_2_with_its_error(cli, capsys):
    code, data = _json(cli, capsys, f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:nowhere")
    assert code == 2
    assert data["policies"] == [] and data["error"]["status"] == "example_error"
    root = project_root(MLP, [])
    assert _read_back(data, root, None) == data
    failed = Advice.from_contract(data, root=root)
    assert (failed.ok, failed.status, failed.message) == (False, "example_error", data["error"]["message"])


def test_chosen_policies_and_the_table(cli, capsys):
    code = cli(
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


def test_markdown(cli, capsys):
    code = cli(
        ["advise", f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example", "--output-format", "markdown"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "| | policy | saves | computed | arguments | host | peak (est.) | recompute |" in out
    assert "| current | `dots_saveable` |" in out
    assert "not XLA's peak memory" in out


def test_what_the_policy_keeps_by_line_largest_first_and_every_one_on_request(cli, capsys):
    """Under the table, one line per source line (the arguments one), the largest first, the rest
    summed; `--residuals all` lists every one; the JSON keeps every residual whatever it says."""
    site = [f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example", "--policies", "nothing_saveable"]

    def kept(*argv):
        assert cli(["advise", *site, *argv]) == 0
        out = capsys.readouterr().out.splitlines()
        start = next(i for i, line in enumerate(out) if line.startswith("The current policy keeps"))
        return [line.split(None, 3) for line in out[start + 1 :] if line.startswith("  ")]

    one = kept("--residuals", "1")
    assert one[0][:3] == ["arguments", "4.5", "KiB"] and one[0][3].startswith(
        "w1 f32[16,32], w2 f32[32,16], x f32[8,16]"
    )
    assert one[1:] == [["...", "2", "more", "arrays, 1.5 KiB (--residuals all lists them)"]]
    every = kept("--residuals", "all")
    assert [(row[0].rpartition("/")[2], row[1], row[2]) for row in every] == [
        ("arguments", "4.5", "KiB"),
        ("mlp.py:7", "1", "KiB"),
        ("mlp.py:9", "512", "B"),
    ]
    assert every[1][3] == "f32[8,32] output of dot_general · saved by the policy"
    code, data = _json(cli, capsys, *site, "--residuals", "1")
    assert code == 0 and len(next(p for p in data["policies"] if p["current"])["residuals"]) == 5


def test_compile_adds_the_compiled_step_and_its_column(cli, capsys):
    site = f"{MLP}:{line_of(MLP)}"
    example = ["--example", "mlp.py:example", "--policies", "nothing_saveable"]
    code, data = _json(cli, capsys, site, *example, "--compile", "--budget", "1GiB")
    assert code == 0
    for entry in data["policies"]:
        assert set(entry) == POLICY | COMPILED
        compiled = entry["compiled"]
        figures = {
            "temp_bytes",
            "argument_bytes",
            "output_bytes",
            "alias_bytes",
            "peak_bytes",
            "host_temp_bytes",
            "device_peak_bytes",
        }
        assert set(compiled) == figures | {"cost"}
        assert all(_is_int(compiled[n]) for n in figures) and entry["compile_s"] > 0
        error = (entry["peak_bytes"] - compiled["temp_bytes"]) / compiled["temp_bytes"]
        assert entry["estimate_error"] == pytest.approx(error)
        # the gradients of the arguments are the step's outputs: as large as the arguments
        assert compiled["argument_bytes"] == entry["argument_bytes"] <= compiled["output_bytes"]
    assert data["compile_target"]["name"] == "cpu" and data["compile_target"]["topology"] is None
    assert data["suggested"]["compiled"] == next(
        p["compiled"] for p in data["policies"] if p["policy"] == data["suggested"]["policy"]
    )
    assert cli(["advise", site, *example, "--compile"]) == 0
    [header] = [line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("policy ")]
    assert header.index("peak (est.)") < header.index("compiled temp") < header.index("recompute")


def test_without_compile_nothing_is_compiled(cli, capsys):
    assert cli(["advise", f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example"]) == 0
    out = capsys.readouterr().out
    assert "peak (est.)" in out and "compiled temp" not in out


def test_every_site_of_a_file_from_a_comment_and_from_pyproject(cli, tmp_path, capsys):
    shutil.copy(MLP, tmp_path / "mlp.py")
    text = (tmp_path / "mlp.py").read_text()
    text = text.replace("dots_saveable)\n", "dots_saveable)  # jax-lsp: example=mlp.py:example\n", 1)
    text += "\n\nother = jax.checkpoint(mlp, policy=jax.checkpoint_policies.nothing_saveable)\n"
    (tmp_path / "mlp.py").write_text(text)
    line = line_of(tmp_path / "mlp.py", "other = ")
    (tmp_path / "pyproject.toml").write_text(f'[tool.jax-lsp.examples]\n"mlp.py:{line}" = "mlp.py:example"\n')
    code, data = _json(cli, capsys, str(tmp_path / "mlp.py"))
    assert code == 0, data
    assert [d["target"]["line"] for d in data] == [line_of(tmp_path / "mlp.py"), line]
    assert all(d["policies"] for d in data)


def test_plot_draws_every_candidate(cli, plotted, capsys, tmp_path):
    code, data, plot = plotted
    assert code == 0
    root = ElementTree.parse(plot).getroot()
    markers = [e for e in root.iter() if "candidate" in (e.get("class") or "").split()]
    titles = sorted(m.findtext("{http://www.w3.org/2000/svg}title").split(":")[0] for m in markers)
    # with a budget, the candidates compiled to check the suggestion; the others are named
    assert titles == sorted(data["fit_check"]["policies"])
    texts = " ".join(e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}text"))
    # one line names them all, the reason once
    undrawn = texts.split("Not drawn, not compiled (the budget's suggestion did not need it): ")[1]
    assert undrawn.count(", ") + 1 >= len(data["policies"]) - len(titles) and "Not drawn" not in undrawn
    [current] = [m for m in markers if "current" in m.get("class").split()]
    [suggested] = [m for m in markers if "suggested" in m.get("class").split()]
    assert current.findtext("{http://www.w3.org/2000/svg}title").startswith(
        "jax.checkpoint_policies.dots_saveable:"
    )
    assert suggested.findtext("{http://www.w3.org/2000/svg}title").startswith(
        data["suggested"]["policy"] + ":"
    )
    assert [e for e in root.iter() if "budget" in (e.get("class") or "").split()]

    unwritable = tmp_path / "no" / "such" / "folder" / "tradeoff.svg"
    code = cli(["advise", *MLP_SITE, "--budget", "6000B", "--plot", str(unwritable)])
    captured = capsys.readouterr()
    assert code == 2
    assert f"jax-lsp: error: --plot: cannot write {unwritable}: No such file or directory" in captured.err
    assert "Suggested for a budget of 5.86 KiB" in captured.out  # the report is printed all the same


def test_bad_options(capsys):
    assert main(["advise", f"{MLP}:1", "--budget", "lots"]) == 2
    assert "--budget" in capsys.readouterr().err
    assert main(["advise", "no/such/file.py:3"]) == 2
    assert main(["advise", f"{MLP}:1", "--target", "v5e-3"]) == 2
    assert "--target: v5e-3: no v5e slice of that size" in capsys.readouterr().err


def test_a_bad_target_in_pyproject_names_the_setting(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp]\ntarget = "a100"\n', encoding="utf-8")
    shutil.copy(MLP, tmp_path / "mlp.py")
    assert main(["advise", f"{tmp_path / 'mlp.py'}:{line_of(MLP)}"]) == 2
    assert "[tool.jax-lsp] target: 'a100' is not a target" in capsys.readouterr().err


def test_a_tpu_target_compiles_by_default_and_without_libtpu_says_how_to_get_it(cli, capsys):
    if subprocess.run([AGENT_PYTHON, "-c", "import libtpu"], capture_output=True).returncode == 0:
        pytest.skip(f"{AGENT_PYTHON} has libtpu: the note is for an interpreter without it")
    site = [f"{MLP}:{line_of(MLP)}", "--example", "mlp.py:example", "--policies", "nothing_saveable"]
    code, data = _json(cli, capsys, *site, "--target", "v5e-1")
    assert code == 0 and data["compile_target"] is None
    (note,) = data["notes"]
    assert "compiling for v5e-1 needs libtpu" in note and "pip install 'jax[tpu]'" in note
    assert all(_is_int(p["peak_bytes"]) and "compiled" not in p for p in data["policies"])
    assert cli(["advise", *site, "--target", "v5e-1"]) == 0
    assert "Note: compiling for v5e-1 needs libtpu" in capsys.readouterr().out


def _entry(policy, computed, flops, error=None, host=0, peak=None, compiled=None, compile_error=None):
    """A policy entry keeping ``computed`` bytes on the device and ``host`` offloaded, beside
    100 bytes of arguments, its step peaking at ``peak`` bytes (default: ``computed``)."""

    def residual(size, memory, kind):
        return Residual((size,), "uint8", size, memory, kind, None, None, None, None, kind)

    kept = [residual(100, "device", "argument"), residual(computed, "device", "computed")]
    kept += [residual(host, "host", "computed")] if host else []
    return PolicyAdvice(
        policy,
        False,
        100 + computed,
        host,
        flops,
        () if error else tuple(kept),
        error,
        peak_bytes=computed if peak is None else peak,
        compiled=Compiled(compiled, 100, 100, 0) if compiled is not None else None,
        compile_error=compile_error,
    )


def _advice(*policies):
    return Advice("ok", "", "m.py", 3, policies=policies)


def test_the_suggestion_least_recompute_whose_computed_bytes_fit_then_the_lowest_peak():
    advice = _advice(
        _entry("jax.checkpoint_policies.everything_saveable", 900, 0),
        _entry("jax.checkpoint_policies.save_only_these_names('h')", 600, 10),
        _entry("jax.checkpoint_policies.dots_saveable", 500, 10),
        _entry("jax.checkpoint_policies.nothing_saveable", 100, 50),
        _entry("broken", 0, 0, error="TypeError"),
    )
    assert advice.suggest(1000).policy.endswith("everything_saveable")
    assert advice.suggest(900).policy.endswith("everything_saveable")  # the arguments do not count
    # the same recompute: the lower peak, name-based or not
    assert advice.suggest(800).policy.endswith("dots_saveable")
    assert advice.suggest(550).policy.endswith("dots_saveable")
    assert advice.suggest(100).policy.endswith("nothing_saveable")
    assert advice.suggest(99) is None


def test_a_tie_in_every_figure_goes_to_the_edit_that_says_least():
    # haliax's scan: the names of the site's policy match nothing, so every candidate but
    # dots_saveable keeps what nothing_saveable keeps and compiles to the same step
    named = _entry("jax.checkpoint_policies.save_only_these_names('scan(layers)')", 100, 50, compiled=700)
    nothing = _entry("jax.checkpoint_policies.nothing_saveable", 100, 50, compiled=700)
    custom = _entry("keep_nothing", 100, 50, compiled=700)
    dots = _entry("jax.checkpoint_policies.dots_saveable", 100, 50, compiled=650)
    # the same figures: JAX's policy over a custom callable, then the shortest expression
    assert _advice(named, custom, nothing).suggest(800) is nothing
    assert _advice(custom, named).suggest(800) is named
    # a figure that differs decides before the expression
    assert _advice(named, nothing, dots).suggest(800) is dots
    # the current policy ties: keep it (no edit); else the one a key selects
    current = replace(custom, current=True)
    assert _advice(named, nothing, current).suggest(800) is current
    selected = replace(named, select=Select("scan", "self.config.policy"))
    assert _advice(nothing, selected).suggest(800) is selected


def test_the_budget_is_for_the_steps_peak_not_for_what_the_policy_keeps():
    keeps_less = _entry("jax.checkpoint_policies.nothing_saveable", 100, 0, peak=900)
    peaks_lower = _entry("jax.checkpoint_policies.dots_saveable", 500, 0, peak=300)
    advice = _advice(keeps_less, peaks_lower)
    assert advice.suggest(400) is peaks_lower and advice.suggest(299) is None
    # on a tie in recompute the lower peak wins, whatever the residuals
    assert advice.suggest(1000) is peaks_lower


def test_with_compile_the_budget_is_for_the_compiled_temporaries_and_a_failure_never_fits():
    estimated_low = _entry("jax.checkpoint_policies.nothing_saveable", 0, 50, peak=100, compiled=900)
    compiled_low = _entry("jax.checkpoint_policies.dots_saveable", 0, 50, peak=800, compiled=300)
    failed = _entry("jax.checkpoint_policies.everything_saveable", 0, 0, peak=1, compile_error="XlaError: no")
    advice = _advice(estimated_low, compiled_low, failed)
    assert advice.compiled
    assert advice.suggest(500) is compiled_low and advice.suggest(10**9) is compiled_low
    assert compiled_low.estimate_error == pytest.approx(500 / 300)
    entry = advice.to_contract(None, 500)
    assert entry["suggested"]["compiled"] == {
        "temp_bytes": 300,
        "argument_bytes": 100,
        "output_bytes": 100,
        "alias_bytes": 0,
        "peak_bytes": None,
        "host_temp_bytes": None,
        "device_peak_bytes": None,
    }
    assert (
        entry["policies"][2]["compiled"] is None and entry["policies"][2]["compile_error"] == "XlaError: no"
    )
    for text in (advice_table(advice, None, 500), format_markdown(advice, None, 500)):
        assert "compiled temp" in text and "everything_saveable: XlaError: no" in text
        [row] = [line for line in text.splitlines() if "everything_saveable" in line and "Xla" not in line]
        assert "failed" in row


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
    # among on-device policies: the lowest peak first, name-based or not
    assert _advice(offload, everything, named, dots).suggest(1000) is dots
    # when only offloading fits, it is suggested
    assert _advice(offload, dots).suggest(100) is offload
    # an offloading one is never ranked free: its host traffic is priced by no column, so one
    # that offloads nothing wins even with more recompute
    nothing = _entry("jax.checkpoint_policies.nothing_saveable", 0, 10)
    assert _advice(nothing, offload).suggest(1000) is nothing
    assert host_traffic(offload) == "moves 500 B to the host and 500 B back per step"
    assert host_traffic(nothing) == ""


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
        assert row.replace("|", " ").split()[-6:] == ["-"] * 6
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


def test_the_root_defaults_to_the_project(cli, capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "pkg").mkdir()
    shutil.copy(MLP, tmp_path / "pkg" / "mlp.py")
    path = Path(tmp_path / "pkg" / "mlp.py")
    code, data = _json(cli, capsys, f"{path}:{line_of(path)}", "--example", "pkg/mlp.py:example")
    assert code == 0, data
    assert data["target"]["path"] == "pkg/mlp.py"


def test_the_line_of_a_checkpointed_def_advises_its_site(cli, capsys):
    code, data = _json(cli, capsys, f"{MLP}:{line_of(MLP, 'def mlp(')}", "--example", "mlp.py:example")
    assert code == 0
    assert data["target"]["line"] == line_of(MLP)


@pytest.mark.parametrize(
    ("fixture", "site", "needle", "budget", "select", "setting"),
    [
        (
            "select_helper",
            "model.py",
            "block = nn.remat",
            "80KiB",
            {"key": "checkpoint_dots", "expression": "self.config.remat_policy"},
            {"path": "config.py", "text": '"nothing_saveable"'},
        ),
        (
            "select_getattr.py",
            "select_getattr.py",
            "Block, prevent_cse",
            "100KiB",
            {"key": "dots_saveable", "expression": "self.remat_policy"},
            {"path": "select_getattr.py", "text": '"nothing_saveable"'},
        ),
        (
            "select_table.py",
            "select_table.py",
            "jax.checkpoint(layer",
            "80KiB",
            {"key": "dots", "expression": "cfg.remat"},
            {"path": "select_table.py", "text": '"full"'},
        ),
    ],
)
def test_a_policy_chosen_by_a_key_suggests_the_key(
    cli, capsys, tmp_path, monkeypatch, fixture, site, needle, budget, select, setting
):
    source = ADVISOR_FIXTURES / fixture
    if source.is_dir():
        shutil.copytree(source, tmp_path, dirs_exist_ok=True)
    else:
        shutil.copy(source, tmp_path)
    monkeypatch.chdir(tmp_path)
    target = f"{site}:{line_of(tmp_path / site, needle)}"
    example = ["--example", f"{site}:example", "--root", str(tmp_path), "--budget", budget]
    example += ["--timeout", "300"]  # the budget's check compiles: seconds each on a loaded machine
    code, data = _json(cli, capsys, target, *example)
    assert code == 0
    suggested = data["suggested"]
    assert suggested["select"] == select
    found = suggested["setting"]
    assert {key: found[key] for key in setting} == setting
    written = (tmp_path / setting["path"]).read_text(encoding="utf-8").splitlines()
    assert written[found["line"] - 1][found["column"] : found["end_column"]] == setting["text"]
    assert data["setting"] == found and data["selector"]["expression"] == select["expression"]
    assert _read_back(data, tmp_path, parse_size(budget)) == data
    chosen = next(p for p in data["policies"] if p["policy"] == suggested["policy"])
    assert chosen["select"] == select

    assert cli(["advise", target, *example]) == 0
    out = capsys.readouterr().out
    name, key = select["expression"].rpartition(".")[2], select["key"]
    assert f"  set {name} to {key!r} ({setting['path']}:{suggested['setting']['line']})" in out
    assert f"({name}={key!r})" in next(row for row in out.splitlines() if row.startswith("+"))
    assert "  policy=" not in out  # the site is not to be replaced


def _policies(data):
    """The JSON's policy entries, read as `assert_lists_what_jax_lists` reads an Advice's."""
    return [
        SimpleNamespace(
            policy=p["policy"],
            error=p.get("error"),
            device_bytes=p["device_bytes"],
            host_bytes=p["host_bytes"],
            residuals=[
                SimpleNamespace(shape=tuple(r["shape"]), dtype=r["dtype"], memory=r["memory"])
                for r in p["residuals"]
            ],
        )
        for p in data["policies"]
    ]


def test_a_namespace_package_repository_advised_from_its_root_without_flags(
    cli, capsys, tmp_path, monkeypatch
):
    """A repository without pyproject.toml or __init__.py, the example in its own folder importing
    the model by its package name: the example path is the current folder's, the repository root
    is on sys.path, and the example's import gets the marked module."""
    repo = Path(shutil.copytree(ADVISOR_FIXTURES / "namespace_repo", tmp_path / "repo"))
    site = repo / "vit_lab" / "model.py"
    monkeypatch.chdir(repo)
    code, data = _json(
        cli, capsys, f"vit_lab/model.py:{line_of(site)}", "--example", "examples/advise_example.py:example"
    )
    assert code == 0, data
    assert data["target"]["path"] == "vit_lab/model.py"
    reference = functools.partial(
        reference_residuals,
        repo,
        "vit_lab/model.py",
        line_of(site),
        example="examples.advise_example:example",
        workdir=tmp_path,
    )
    assert_lists_what_jax_lists(_policies(data), reference)


@pytest.mark.parametrize(
    "folder, site",
    [("custom_vjp", "ring_attention.py"), ("registrations", "registered.py"), ("main_guard", "train.py")],
)
def test_module_level_calls_run_and_a_main_block_does_not(cli, capsys, tmp_path, monkeypatch, folder, site):
    """A `defvjp` and registrations at module level run, as an import runs them; the script's
    `if __name__ == "__main__":` block (it writes a file and exits) does not."""
    project = Path(shutil.copytree(ADVISOR_FIXTURES / folder, tmp_path / folder))
    monkeypatch.chdir(project)
    line = line_of(project / site)
    code, data = _json(cli, capsys, f"{site}:{line}", "--example", f"{site}:example")
    assert code == 0, data
    assert not (project / "training_started.txt").exists()
    stem = site.removesuffix(".py")
    reference = functools.partial(
        reference_residuals, project, site, line, example=f"{stem}:example", workdir=tmp_path
    )
    assert_lists_what_jax_lists(_policies(data), reference)


def test_the_root_is_on_sys_path_and_an_example_path_may_start_there(cli, capsys, tmp_path, monkeypatch):
    repo = Path(shutil.copytree(ADVISOR_FIXTURES / "namespace_repo", tmp_path / "repo"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    site = repo / "vit_lab" / "model.py"
    code, data = _json(
        cli,
        capsys,
        f"{site}:{line_of(site)}",
        "--root",
        str(repo),
        "--example",
        "examples/advise_example.py:example",
    )
    assert code == 0, data
    assert data["target"]["path"] == "vit_lab/model.py"


def test_the_advised_project_root_is_the_repositorys_top_folder(tmp_path):
    repo = tmp_path / "repo"
    (repo / "vit_lab").mkdir(parents=True)
    site = repo / "vit_lab" / "model.py"
    site.write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert project_root(site) == repo / "vit_lab"  # check's root: the folder above the package
    assert repository_root(site, repo) == repo  # run from the repository: that folder
    assert repository_root(site, elsewhere) == repo / "vit_lab"  # from elsewhere: check's
    (repo / ".git").mkdir()
    assert repository_root(site, elsewhere) == repo
    (repo / "vit_lab" / "setup.py").write_text("")
    assert repository_root(site, elsewhere) == repo
    (repo / "vit_lab" / "pyproject.toml").write_text("")
    assert repository_root(site, elsewhere) == repo / "vit_lab"


def test_the_help_says_what_the_paths_mean(capsys):
    assert main(["advise", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "looked for in the current folder, then the project root, then the site's folder" in text
    assert "on sys.path after the current folder" in text


NO_POLICY = """
import jax
import jax.numpy as jnp


def mlp(x, w1, w2):
    return jnp.sin(jnp.tanh(x @ w1) @ w2)


block = jax.checkpoint(mlp)
dots = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)
ckpt = jax.remat
aliased = ckpt(mlp)


def example():
    return tuple(jax.ShapeDtypeStruct(shape, jnp.float32) for shape in ((8, 16), (16, 32), (32, 16)))
"""


def test_a_checkpoint_without_a_policy_is_a_site_with_jaxs_default(cli, tmp_path, capsys):
    path = tmp_path / "model.py"
    path.write_text(NO_POLICY.lstrip("\n"))
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp.examples]\n"model.py" = "model.py:example"\n')
    code, data = _json(cli, capsys, str(path))
    assert code == 0, data
    block, dots, aliased = (line_of(path, f"{name} = ") for name in ("block", "dots", "aliased"))
    assert [d["target"]["line"] for d in data] == [block, dots, aliased]
    for advised in (data[0], data[2]):
        current = next(p for p in advised["policies"] if p["current"])
        nothing = next(p for p in advised["policies"] if p["policy"].endswith(".nothing_saveable"))
        assert current["policy"] == "None" and current["residuals"] == nothing["residuals"]

    assert cli(["advise", f"{path}:{aliased}", "--budget", "1MiB"]) == 0
    table = capsys.readouterr().out
    assert "*  None (default: nothing_saveable)" in table
    assert "  policy=jax.checkpoint_policies.dots_saveable" in table


def test_the_names_that_change_nothing_in_the_json_and_under_the_table(cli, capsys):
    fixture = ADVISOR_FIXTURES / "no_effect.py"
    site = f"{fixture}:{line_of(fixture)}"
    example = ["--example", "no_effect.py:example", "--root", str(ADVISOR_FIXTURES)]
    code, data = _json(cli, capsys, site, *example)
    assert code == 0
    current = next(p for p in data["policies"] if p["current"])
    tag_line = line_of(fixture, 'checkpoint_name(x * 2.0, "decoder_layer_input")')
    assert [(n["name"], n["role"], n["reason"], n["tagged_outside"]) for n in current["no_effect"]] == [
        ("decoder_layer_input", "saved", "not_produced", [{"path": "no_effect.py", "line": tag_line}]),
        ("mlpwo", "saved", "not_needed", []),
        ("query_proj", "offloaded", "not_produced", []),
    ]
    assert all(isinstance(n["without"], str) for n in current["no_effect"])
    assert cli(["advise", site, *example]) == 0
    out = capsys.readouterr().out
    below = out.split("Names of the current policy that change nothing:\n", 1)[1].splitlines()
    assert below[:3] == [
        "  'decoder_layer_input' (saved): no checkpoint_name of it runs inside the checkpoint "
        f"(tagged outside it at {relative(str(fixture), Path.cwd())}:{tag_line})",
        "  'mlpwo' (saved): the backward pass never reads the value it names",
        "  'query_proj' (offloaded): no checkpoint_name of it runs inside the checkpoint "
        "(tagged nowhere the example runs)",
    ]


def _blocks(page: Path, language: str) -> list[str]:
    return page.read_text(encoding="utf-8").split(f"```{language}\n")[1:]


def test_jax191s_page_shows_what_advise_reports_on_its_examples(cli, tmp_path, capsys, monkeypatch):
    page = Path(__file__).parents[3] / "docs" / "rules" / "JAX191.md"
    bad, good = (block.split("```", 1)[0] for block in _blocks(page, "python"))
    shown = _blocks(page, "console")[0].split("```", 1)[0].splitlines()
    monkeypatch.chdir(tmp_path)
    heading = "Names of the current policy that change nothing:\n"
    for code, expected in ((bad, shown[1:]), (good, [])):
        (tmp_path / "example.py").write_text(code, encoding="utf-8")
        site = f"example.py:{line_of(tmp_path / 'example.py')}"
        assert cli(["advise", site, "--example", "example.py:example"]) == 0
        out = capsys.readouterr().out
        listed = out.split(heading, 1)[1].split("\n\n", 1)[0].splitlines() if heading in out else []
        assert listed == expected
        if code is bad:
            assert f"`jax-lsp advise {site} --example example.py:example`" in page.read_text(encoding="utf-8")
