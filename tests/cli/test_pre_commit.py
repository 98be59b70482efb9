"""The pre-commit hook, installed and run by pre-commit itself from this repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.runner import REPO

pytest.importorskip("pre_commit", reason="pre-commit is not installed")

BROKEN = "import jax\n\n\ndef p(prim, *args, **params):\n    return\n\n\nf = jax.checkpoint(lambda x: x, policy=p)\n"
IDENTITY = {k: "jax-lsp tests" for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")} | {
    k: "tests@jax-lsp.invalid" for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")
}


def _try_repo(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "jax-lsp", *args],
        check=False,
        cwd=repo,
        env={**os.environ, **IDENTITY},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_hook_reports_broken_policies(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "model.py").write_text(BROKEN)
    (tmp_path / "clean.py").write_text("x = 1\n")
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": BROKEN.splitlines(True),
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    done = _try_repo(tmp_path, "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "model.py:5:5: JAX101" in done.stdout and "clean.py" not in done.stdout
    assert "train.ipynb:cell 1:5:5: JAX101" in done.stdout
