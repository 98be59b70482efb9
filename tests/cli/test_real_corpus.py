"""`jax-lsp check` on a pinned slice of real JAX code (tests/fixtures/real; its README says where
each file comes from): no crash, no internal error, no syntax error reported on valid files, and
exactly the expected findings, whether the folder is checked as a project or file by file (as
pre-commit and editors do)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.runner import REPO, run_check

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"

# (file, line, code) -> why it is a real mistake. Every other finding is a false alarm.
EXPECTED: dict[tuple[str, int, str], str] = {}


def _listed_in_readme() -> list[str]:
    return sorted(set(re.findall(r"^\| `([\w.]+\.py)` \|", (FIXTURES / "README.md").read_text(), re.MULTILINE)))


def test_every_fixture_is_described_in_the_readme():
    assert _listed_in_readme() == sorted(p.name for p in FIXTURES.glob("*.py"))
    assert len(_listed_in_readme()) >= 5


@pytest.mark.parametrize("how", ["project", "named files"])
def test_real_files_get_exactly_the_expected_findings(tmp_path: Path, how: str):
    project = tmp_path / "real"  # outside this repository, whose settings exclude tests/
    shutil.copytree(FIXTURES, project)
    names = sorted(p.name for p in project.glob("*.py"))
    done = run_check(project, "--output-format", "json", *(["."] if how == "project" else names))

    assert done.returncode != 2, done.stderr
    assert "internal error" not in done.stderr
    found = sorted((Path(f["path"]).name, f["line"], f["code"], f["message"]) for f in json.loads(done.stdout))
    assert [f for f in found if f[2] == "JAX001"] == [], "syntax errors reported on files that are valid Python 3.12"
    assert [f[:3] for f in found] == sorted(EXPECTED), found
    assert done.returncode == (1 if EXPECTED else 0)


def test_checking_the_repository_leaves_the_fixtures_out():
    """The fixtures hold real code, not ours: `[tool.jax-lsp] exclude` keeps tests/ out."""
    done = run_check(REPO, "--output-format", "json", ".")
    assert done.returncode != 2, done.stderr
    paths = {Path(f["path"]).resolve() for f in json.loads(done.stdout)}
    assert not [p for p in paths if p.is_relative_to(REPO / "tests")]
