"""Idioms of real JAX code that once cost a whole file: named lambdas, deep `elif` chains, and
an analysis bug in one place (it must cost only that place, and say where)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jax_lsp.engine import Workspace
from jax_lsp.rules import ALL_RULES
from tests.cli.runner import run_check

NAMED_LAMBDAS = """import jax, jax.numpy as jnp
save_cos = lambda prim, *_, **__: str(prim) == 'cos'
skip_sin = lambda prim, *_, **__: None if prim.name == "sin" else True
f = jax.remat(lambda x: jnp.sin(jnp.sin(x)), policy=save_cos)
g = jax.remat(lambda x: jnp.sin(jnp.sin(x)), policy=skip_sin)


def falls_off(prim, *a, **k):
    if prim.name == "sin":
        return True


h = jax.remat(lambda x: x, policy=falls_off)
"""


def _json(done) -> list[tuple[str, int]]:
    return sorted((f["code"], f["line"]) for f in json.loads(done.stdout))


def test_named_lambdas_are_checked_like_defs_and_cost_nothing_else(tmp_path: Path):
    (tmp_path / "model.py").write_text(NAMED_LAMBDAS)
    done = run_check(tmp_path, "--output-format", "json", "model.py")
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr
    assert _json(done) == [("JAX101", 3), ("JAX101", 8)]


def test_lambdas_in_a_class_body_and_a_policy_table_are_followed(tmp_path: Path):
    (tmp_path / "model.py").write_text(
        "import jax\n"
        "class Policies:\n"
        "    skip = lambda prim, *a, **k: None\n"
        "TABLE = dict(odd=lambda prim, *a, **k: 1, ok=jax.checkpoint_policies.dots_saveable)\n"
        "f = jax.remat(lambda x: x, policy=Policies.skip)\n"
        "g = jax.remat(lambda x: x, policy=TABLE['odd'])\n"
        "h = jax.remat(lambda x: x, policy=TABLE['ok'])\n"
    )
    done = run_check(tmp_path, "--output-format", "json", "model.py")
    assert _json(done) == [("JAX101", 3), ("JAX103", 4)], done.stderr


@pytest.mark.parametrize("branches", [1_500, 2_800])
def test_a_policy_with_a_long_elif_chain_is_analysed(tmp_path: Path, branches: int):
    chain = "".join(f"    elif prim.name == 'p{i}':\n        return True\n" for i in range(branches))
    text = f"import jax\ndef p(prim, *a, **k):\n    if prim.name == 'x':\n        return True\n{chain}"
    (tmp_path / "gen.py").write_text(text + "f = jax.remat(lambda x: x, policy=p)\n")
    done = run_check(tmp_path, "--output-format", "json", "gen.py")
    assert "internal error" not in done.stderr
    assert _json(done) == [("JAX101", 2)]


def test_an_analysis_bug_costs_one_policy_and_names_it(tmp_path: Path, monkeypatch, capsys):
    """A rule that raises on one policy: the file's other findings are still reported, the error
    names the file and the line, and the summary never says that all checks passed."""
    from jax_lsp import cli

    rule = next(r for r in ALL_RULES if r.code == "JAX104")

    def broken(self, policy):
        raise ValueError("a bug in the rule")

    monkeypatch.setattr(type(rule), "check_policy", broken)
    (tmp_path / "model.py").write_text(NAMED_LAMBDAS)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--output-format", "concise", "model.py"]) == 2
    out, err = capsys.readouterr()
    assert "model.py:3:" in out and "model.py:8:" in out  # JAX101 still reported
    assert "All checks passed" not in out
    assert (
        f"{tmp_path / 'model.py'}:2: internal error (JAX104 on a policy): ValueError: a bug in the rule"
        in err
    )


def test_the_workspace_reports_each_bug_once_then_forgets_it(tmp_path: Path, monkeypatch):
    rule = next(r for r in ALL_RULES if r.code == "JAX104")
    monkeypatch.setattr(type(rule), "check_site", lambda self, site: 1 / 0)
    (tmp_path / "model.py").write_text(NAMED_LAMBDAS)
    ws = Workspace([tmp_path])
    assert [f.code for f in ws.check_file(tmp_path / "model.py")] == ["JAX101", "JAX101"]
    errors = ws.take_internal_errors()
    assert [(e.line, e.stage) for e in errors] == [
        (3, "JAX104 on a site"),
        (4, "JAX104 on a site"),
        (12, "JAX104 on a site"),
    ]
    assert ws.take_internal_errors() == []


POLICIES = 'def p(prim, *a, **k):\n    if prim.name == "sin":\n        return True\n'


def _monorepo(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mono"\n')
    pkg = tmp_path / "research" / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "policies.py").write_text(POLICIES)
    (pkg / "model.py").write_text(
        "import jax\nfrom pkg.policies import p\nf = jax.checkpoint(lambda x: x, policy=p)\n"
    )
    return pkg


@pytest.mark.parametrize("named", [".", "research/proj/pkg/policies.py"])
def test_a_package_below_the_project_root_resolves_across_modules(tmp_path: Path, named: str):
    _monorepo(tmp_path)
    done = run_check(tmp_path, "--output-format", "json", named)
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [
        ("research/proj/pkg/policies.py", "JAX101")
    ]


def test_src_names_folders_that_imports_come_from(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp]\nsrc = ["libs"]\n')
    (tmp_path / "libs").mkdir()
    (tmp_path / "apps").mkdir()
    (tmp_path / "libs" / "shared_policies.py").write_text(POLICIES)
    (tmp_path / "apps" / "train.py").write_text(
        "import jax\nfrom shared_policies import p\nf = jax.checkpoint(lambda x: x, policy=p)\n"
    )
    done = run_check(tmp_path, "--output-format", "json")
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [
        ("libs/shared_policies.py", "JAX101")
    ]
    (tmp_path / "pyproject.toml").write_text("[tool.jax-lsp]\n")
    assert json.loads(run_check(tmp_path, "--output-format", "json").stdout) == []


def test_a_named_file_gets_findings_from_sites_elsewhere_even_through_a_re_export(tmp_path: Path):
    """Pre-commit names only the changed file: the files that could use its policies are found
    by the names it defines, and followed through the package that re-exports them."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.policies import p as chosen\n")
    (tmp_path / "pkg" / "policies.py").write_text(POLICIES)
    (tmp_path / "train.py").write_text(
        "import jax\nfrom pkg import chosen\nf = jax.checkpoint(lambda x: x, policy=chosen)\n"
    )
    (tmp_path / "unrelated.py").write_text("import jax\nf = jax.checkpoint(lambda x: x, policy=None)\n")
    done = run_check(tmp_path, "--output-format", "json", "pkg/policies.py")
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [("pkg/policies.py", "JAX101")]
