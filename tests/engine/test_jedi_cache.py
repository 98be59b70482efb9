"""`jax-lsp check` keeps jedi's answers in its result cache, with the files jedi read for each:
a re-check of a changed file reuses them until one of those files changes. Real jedi."""

from __future__ import annotations

import re

import pytest

from tests.cli.runner import run_check
from tests.engine.test_jedi_names import star_import_project

pytest.importorskip("jax")  # jedi names `jax.checkpoint` by reading jax's own source

SITES = 3


def jedi_line(stderr: str) -> dict[str, int]:
    line = next(line for line in stderr.splitlines() if "jedi: asked about" in line)
    counts = re.search(
        r"asked about (\d+) .* (\d+) it could not name.* (\d+) answered from the result cache", line
    )
    assert counts, line
    return dict(zip(("asked", "unnamed", "cached"), map(int, counts.groups())))


def check(tmp_path) -> tuple[list[int], dict[str, int]]:
    result = run_check(tmp_path, "--output-format", "concise", "--verbose", ".")
    lines = [int(m) for m in re.findall(r"^model\.py:(\d+):\d+: JAX101", result.stdout, re.M)]
    return lines, jedi_line(result.stderr)


def test_jedi_answers_come_from_the_cache_until_a_file_jedi_read_changes(tmp_path):
    path, text = star_import_project(tmp_path, SITES)
    # A callee the star-imported module binds to what jedi cannot infer: jedi "could not name"
    # it, kept too.
    path.write_text(text + "h = unknown(g, policy=bad_0)\n")
    with (tmp_path / "helpers.py").open("a") as helpers:
        helpers.write("unknown, _ = undefined_name, None\n")
    (tmp_path / "pyproject.toml").write_text("[tool.jax-lsp]\njedi-budget = 60\n")  # roomy
    first, asked = check(tmp_path)
    assert first == [3, 7, 11]
    assert asked == {"asked": SITES + 1, "unnamed": 1, "cached": 0}

    # The file changed elsewhere: its result is checked again, jedi's answers are reused.
    path.write_text(path.read_text() + "x = 1\n")
    assert check(tmp_path) == (first, {"asked": 0, "unnamed": 0, "cached": SITES + 1})

    # A module jedi read for the answers changed: they are asked again, and the file's result
    # (its own text unchanged) goes with them.
    helpers = tmp_path / "helpers.py"
    helpers.write_text(helpers.read_text().replace("remat_0, _ = jax.checkpoint", "remat_0, _ = jax.jit"))
    assert check(tmp_path) == ([7, 11], {"asked": SITES + 1, "unnamed": 1, "cached": 0})
