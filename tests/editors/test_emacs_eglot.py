"""A second real editor: Emacs with eglot (Debian's emacs-nox + elpa-eglot), push diagnostics
through flymake and a quick fix applied by eglot itself."""

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
EMACS = shutil.which("emacs")


def has_eglot() -> bool:
    if EMACS is None:
        return False
    probe = subprocess.run(
        [EMACS, "--batch", "--eval", "(progn (package-initialize) (require 'eglot))"],
        capture_output=True,
        timeout=60,
    )
    return probe.returncode == 0


@pytest.mark.skipif(
    not has_eglot(), reason="Emacs with eglot is not installed (apt-get install emacs-nox elpa-eglot)"
)
def test_eglot_shows_the_finding_and_applies_the_quick_fix(tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    (work / ".git").mkdir()  # eglot's project root
    target = work / "model.py"
    shutil.copy(EXAMPLE, target)
    result_file = tmp_path / "result.json"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "JAX_LSP_RESULT": str(result_file),
        "JAX_LSP_TARGET": str(target),
        "JAX_LSP_EGLOT_CONFIG": str(REPO / "editors" / "emacs" / "jax-lsp-eglot.el"),
    }
    completed = subprocess.run(
        [
            EMACS,
            "--batch",
            "--eval",
            "(package-initialize)",
            "-l",
            str(Path(__file__).with_name("eglot_quickfix.el")),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result_file.exists(), completed.stderr[-3000:]
    result = json.loads(result_file.read_text())
    assert "error" not in result, result
    [diagnostic] = result["diagnostics"]
    assert (diagnostic["line"], diagnostic["column"]) == (7, 4)
    assert "JAX101" in diagnostic["text"]
    assert "jax-lsp (JAX101): Append `return False`" in result["actions"]
    assert "Disable JAX101 for this line" in result["actions"]
    assert result["text"] == EXAMPLE.read_text().replace(
        "        return True\n", "        return True\n    return False\n"
    )
    assert result["cleared"] is True
