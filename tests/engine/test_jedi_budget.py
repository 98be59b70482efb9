"""`jax-lsp check` keeps jedi within `jedi-budget` per file, and `--verbose` says where it did not suffice."""

from __future__ import annotations

import pytest

from jax_lsp.engine.batch import PARALLEL_MIN_FILES
from tests.cli.runner import run_check
from tests.engine.test_jedi_names import star_import_project

pytest.importorskip("jax")  # jedi names `jax.checkpoint` by reading jax's own source

SITES = 12


def test_a_tiny_budget_leaves_the_callees_unknown_and_verbose_says_so(tmp_path):
    star_import_project(tmp_path, SITES)
    (tmp_path / "pyproject.toml").write_text("[tool.jax-lsp]\njedi-budget = 0.000001\n")
    result = run_check(tmp_path, "--output-format", "concise", "--verbose", "model.py")
    # The first callee's inference starts within the budget and spends it; the others stay unknown.
    assert result.stdout.count("JAX101") <= 1
    assert (
        f"jax-lsp: jedi: model.py: budget of 1e-06 s spent, {SITES - 1} callee(s) left unknown"
        in result.stderr
    )
    assert f"{SITES - 1} left unknown past the budget" in result.stderr


def test_within_the_budget_jedi_names_every_callee(tmp_path):
    star_import_project(tmp_path, SITES)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.jax-lsp]\njedi-budget = 60\n"
    )  # roomy, even on a slow machine
    result = run_check(tmp_path, "--output-format", "concise", "--verbose", "model.py")
    assert result.stdout.count("JAX101") == SITES
    assert f"jax-lsp: jedi: asked about {SITES} callee(s) in 1 file(s)" in result.stderr
    assert "0 left unknown past the budget" in result.stderr
    assert "budget of" not in result.stderr


def test_without_verbose_nothing_is_said_about_jedi(tmp_path):
    star_import_project(tmp_path, 1)
    assert "jedi" not in run_check(tmp_path, "model.py").stderr


def test_verbose_counts_the_files_checked_on_other_processes(tmp_path):
    star_import_project(tmp_path, SITES)
    for n in range(PARALLEL_MIN_FILES):  # enough files with sites for `check` to start processes
        (tmp_path / f"other_{n}.py").write_text("import jax\nf = jax.checkpoint(g, policy=p)\n")
    (tmp_path / "pyproject.toml").write_text("[tool.jax-lsp]\njedi-budget = 0.000001\n")
    result = run_check(tmp_path, "--verbose", "--jobs", "2", "--no-cache", ".")
    assert (
        f"jax-lsp: jedi: model.py: budget of 1e-06 s spent, {SITES - 1} callee(s) left unknown"
        in result.stderr
    )
    assert "jax-lsp: jedi: asked about 1 callee(s) in 1 file(s)" in result.stderr
