"""`jax-lsp check` on notebooks, run as a user runs it (the golden cases show every format)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.runner import run_check
from tests.core.notebooks.test_notebook import IPYTHON_LINES


def _write(path: Path, *cells: str | tuple[str, str]) -> Path:
    """A notebook as Jupyter writes it; a cell is its code, or (cell_type, text)."""

    def cell(spec: str | tuple[str, str], n: int) -> dict:
        kind, text = spec if isinstance(spec, tuple) else ("code", spec)
        extra = {"execution_count": None, "outputs": []} if kind == "code" else {}
        return {"cell_type": kind, "id": f"c{n}", "metadata": {}, "source": text.splitlines(True), **extra}

    document = {
        "cells": [cell(c, n) for n, c in enumerate(cells)],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


DEFINES = (
    "import jax\n\n\ndef policy(prim, *args, **params):\n    if prim.name == 'sin':\n        return True"
)
USES = "f = jax.checkpoint(abs, policy=policy)"


def _concise(cwd: Path, *args: str) -> tuple[list[str], subprocess.CompletedProcess]:
    done = run_check(cwd, "--output-format", "concise", "--no-cache", *args)
    return [line for line in done.stdout.splitlines() if ": JAX" in line], done


def test_a_policy_of_one_cell_used_in_another_is_reported_in_its_cell(tmp_path: Path) -> None:
    _write(tmp_path / "model.ipynb", ("markdown", "# Model"), DEFINES, USES)
    found, done = _concise(tmp_path)
    assert found == [
        (
            "model.ipynb:cell 2:4:5: JAX101 `policy` can reach the end of its body and return `None`; JAX accepts "
            "only a bool, `Saveable`, `Recompute` or `Offloadable(...)`: end it with `return False`"
        )
    ]
    assert done.returncode == 1


def test_ipython_syntax_is_opaque_and_a_real_syntax_error_is_placed_in_its_cell(tmp_path: Path) -> None:
    _write(tmp_path / "magics.ipynb", "%%capture\n" + DEFINES, *IPYTHON_LINES, "display(f)\n" + USES)
    found, _ = _concise(tmp_path)
    assert [line.split(" `")[0] for line in found] == ["magics.ipynb:cell 1:5:5: JAX101"]
    _write(tmp_path / "magics.ipynb", DEFINES, "x = (1,\n", USES)
    found, _ = _concise(tmp_path)
    assert [line.split(": ")[0:2] for line in found] == [
        [
            "magics.ipynb:cell 1:4:5",
            "JAX101 `policy` can reach the end of its body and return `None`; JAX accepts only a bool, `Saveable`, `Recompute` or `Offloadable(...)`",
        ],
        ["magics.ipynb:cell 2:1:5", "JAX001 Syntax error"],
    ]


def test_noqa_in_a_cell(tmp_path: Path) -> None:
    _write(tmp_path / "model.ipynb", DEFINES.replace("**params):", "**params):  # noqa: JAX101"), USES)
    found, done = _concise(tmp_path)
    assert found == [] and done.returncode == 0, done.stdout


def test_notebooks_follow_git_ignore_and_exclude(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("ignored.ipynb\n")
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp]\nexclude = ["drafts"]\n')
    (tmp_path / "drafts").mkdir()
    for path in (tmp_path / "ignored.ipynb", tmp_path / "drafts" / "d.ipynb", tmp_path / "kept.ipynb"):
        _write(path, DEFINES, USES)
    found, _ = _concise(tmp_path)
    assert [line.split(":")[0] for line in found] == ["kept.ipynb"]
    found, _ = _concise(tmp_path, "ignored.ipynb")  # a file named on the command line is checked
    assert [line.split(":")[0] for line in found] == ["ignored.ipynb"]


def test_an_invalid_notebook_is_an_error_and_the_rest_is_still_checked(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text('{"cells": [{"source": "f(policy=p)"')
    _write(tmp_path / "model.ipynb", DEFINES, USES)
    found, done = _concise(tmp_path)
    assert [line.split(": ")[0:2] for line in found] == [
        ["broken.ipynb:1:36", "JAX002 Not a valid notebook"],  # the end of the file
        [
            "model.ipynb:cell 1:4:5",
            "JAX101 `policy` can reach the end of its body and return `None`; JAX accepts only a bool, `Saveable`, `Recompute` or `Offloadable(...)`",
        ],
    ]
    assert done.returncode == 1


def test_a_fix_on_a_line_of_ipython_syntax_is_not_applied(tmp_path: Path) -> None:
    # The fix appends `return False` after the body's last line, which is a magic here.
    path = _write(tmp_path / "model.ipynb", DEFINES + "\n    %time g()", USES)
    before = path.read_bytes()
    done = run_check(tmp_path, "--fix", "--no-cache", "--output-format", "concise")
    assert done.returncode == 1 and "cell 1:4:5: JAX101" in done.stdout, done.stdout + done.stderr
    assert path.read_bytes() == before


def test_a_named_module_gets_the_findings_of_a_notebook_that_uses_its_policy(tmp_path: Path) -> None:
    # As pre-commit runs it: only the changed module is named; the notebook's site uses its policy.
    (tmp_path / "policies.py").write_text(DEFINES.replace("import jax\n\n\n", "") + "\n")
    _write(tmp_path / "train.ipynb", "!pip install jax\nimport jax\nfrom policies import policy", USES)
    found, _ = _concise(tmp_path, "policies.py")
    assert [line.split(" `")[0] for line in found] == ["policies.py:1:5: JAX101"]
