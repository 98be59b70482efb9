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
EXPECTED: dict[tuple[str, int, str], str] = {
    ("easydel_utils.py", 189, "JAX107"): (
        "get_gradient_checkpoint_policy('save_from_both_policies'), a documented choice that "
        "auto_remat(..., policy='save_from_both_policies') makes, returns the factory uncalled: "
        "the first grad raises TypeError (test_easydel_policy_table_member_fails_under_jax)"
    ),
}


def _listed_in_readme() -> list[str]:
    return sorted(
        set(re.findall(r"^\| `([\w.]+\.py)` \|", (FIXTURES / "README.md").read_text(), re.MULTILINE))
    )


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
    found = sorted(
        (Path(f["path"]).name, f["line"], f["code"], f["message"]) for f in json.loads(done.stdout)
    )
    assert [f for f in found if f[2] == "JAX001"] == [], (
        "syntax errors reported on files that are valid Python 3.12"
    )
    assert [f[:3] for f in found] == sorted(EXPECTED), found
    assert done.returncode == (1 if EXPECTED else 0)


def test_checking_the_repository_leaves_the_fixtures_out():
    """The fixtures hold real code, not ours: `[tool.jax-lsp] exclude` keeps tests/ out."""
    done = run_check(REPO, "--output-format", "json", ".")
    assert done.returncode != 2, done.stderr
    paths = {Path(f["path"]).resolve() for f in json.loads(done.stdout)}
    assert not [p for p in paths if p.is_relative_to(REPO / "tests")]


def test_easydel_policy_table_member_fails_under_jax():
    """easydel 0.3.0's `get_gradient_checkpoint_policy`, run as released: the member that the
    key 'save_from_both_policies' chooses fails at the first grad; another member works."""
    import ast
    import enum
    import typing

    import jax
    import jax.numpy as jnp

    tree = ast.parse((FIXTURES / "easydel_utils.py").read_text(encoding="utf-8"))
    [function] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_gradient_checkpoint_policy"
    ]

    class EasyDeLGradientCheckPointers(str, enum.Enum):  # stands for easydel's, unused by these names
        pass

    namespace = {"jax": jax, "tp": typing, "EasyDeLGradientCheckPointers": EasyDeLGradientCheckPointers}
    exec(compile(ast.Module([function], []), "easydel_utils.py", "exec"), namespace)
    get_policy = namespace["get_gradient_checkpoint_policy"]

    def grad_with(policy):
        f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
        return jax.grad(lambda x: jnp.sum(f(x)))(jnp.ones((4, 4)))

    grad_with(get_policy("dots_saveable"))
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        grad_with(get_policy("save_from_both_policies"))
