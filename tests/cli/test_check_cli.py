"""`jax-lsp check` and `jax-lsp rule` as subprocesses: exit codes, messages, --fix on disk, bad input."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from jax_lsp.cli.fixing import fix_all
from jax_lsp.core.codes import CODES, Family
from jax_lsp.engine import Workspace
from jax_lsp.engine.batch import check_paths
from tests.cli.runner import REPO, run_check, run_jax_lsp

BROKEN = """import jax


def policy(prim, *args, **params):
    return


f = jax.checkpoint(lambda x: x, policy=policy)
"""


def _project(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.py"], "missing.py: no such file or folder"),
        (["--select", "E501"], "--select: `select` has unknown codes ['E501']"),
        (["--config", "nope.toml"], "nope.toml: no such file"),
    ],
)
@pytest.mark.parametrize("output_format", ["concise", "json", "sarif"])
def test_usage_errors_exit_2_with_a_message(
    tmp_path: Path, args: list[str], message: str, output_format: str
) -> None:
    _project(tmp_path, **{"a.py": BROKEN})
    done = run_check(tmp_path, *args, "--output-format", output_format)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.startswith("jax-lsp: error: ")
    if output_format == "json":
        assert json.loads(done.stdout) == []
    elif output_format == "sarif":
        assert json.loads(done.stdout)["runs"][0]["results"] == []
    else:
        assert done.stdout == ""


def test_a_broken_pyproject_is_a_usage_error(tmp_path: Path) -> None:
    _project(
        tmp_path, **{"pyproject.toml": '[tool.jax-lsp]\nselect = "JAX1"\nignore = [1]\n', "a.py": BROKEN}
    )
    done = run_check(tmp_path)
    assert done.returncode == 2
    assert "pyproject.toml: [tool.jax-lsp] `ignore` must be a list of rule codes" in done.stderr


def test_unknown_options_are_usage_errors(tmp_path: Path) -> None:
    done = run_check(tmp_path, "--output-format", "xml")
    assert done.returncode == 2 and "invalid choice: 'xml'" in done.stderr


def test_exit_codes_follow_what_remains(tmp_path: Path) -> None:
    _project(tmp_path, **{"a.py": BROKEN, "b.py": "x = 1\n"})
    assert run_check(tmp_path, "b.py").returncode == 0
    assert run_check(tmp_path).returncode == 1
    assert run_check(tmp_path, "--ignore", "JAX101").returncode == 0
    fixed = run_check(tmp_path, "--fix")
    assert fixed.returncode == 0 and "Fixed 1 error in 1 file." in fixed.stdout
    assert run_check(tmp_path).returncode == 0


def test_the_default_path_is_the_working_folder_and_skips_tool_folders(tmp_path: Path) -> None:
    _project(
        tmp_path,
        **{
            "pkg/a.py": BROKEN,
            ".venv/lib/b.py": BROKEN,
            "node_modules/c.py": BROKEN,
            "build/d.py": BROKEN,
            "env/e.py": BROKEN,
            "env/pyvenv.cfg": "home = /usr\n",
        },
    )
    done = run_check(tmp_path, "--output-format", "json")
    assert {f["path"] for f in json.loads(done.stdout)} == {"pkg/a.py"}


def test_fix_writes_atomically_keeping_the_mode(tmp_path: Path) -> None:
    _project(tmp_path, **{"a.py": BROKEN})
    (tmp_path / "a.py").chmod(0o640)
    done = run_check(tmp_path, "--fix", "--output-format", "json")
    assert json.loads(done.stdout) == [] and done.stderr == "Fixed 1 error in 1 file.\n"
    assert (tmp_path / "a.py").read_text() == BROKEN.replace("    return\n", "    return False\n")
    assert stat.S_IMODE((tmp_path / "a.py").stat().st_mode) == 0o640
    # No temporary file left (beside the result cache, which holds no temporary file either).
    assert sorted(p.name for p in tmp_path.iterdir()) == [".jax-lsp-cache", "a.py"]
    assert not list((tmp_path / ".jax-lsp-cache").glob("*.tmp"))


def test_fix_leaves_alone_a_file_changed_on_disk_meanwhile(tmp_path: Path) -> None:
    path = _project(tmp_path, **{"a.py": BROKEN}) / "a.py"
    ws = Workspace([tmp_path])

    def recheck_while_an_editor_saves():
        path.write_text(BROKEN + "# saved meanwhile\n")
        return check_paths(ws, [path]), []

    outcome = fix_all(ws, check_paths(ws, [path]), [], False, recheck_while_an_editor_saves)
    assert path.read_text() == BROKEN + "# saved meanwhile\n"
    assert outcome.written == [] and outcome.fixed == 0
    assert outcome.errors == [f"{path}: changed on disk while fixing; not written"]


def test_a_100k_line_file_is_analysed_like_any_other(tmp_path: Path) -> None:
    filler = "".join(f"value_{i} = {i} * 2\n" for i in range(100_000))
    _project(tmp_path, **{"big.py": filler + BROKEN})
    done = run_check(tmp_path, "--output-format", "json")
    assert [(f["line"], f["code"]) for f in json.loads(done.stdout)] == [(100_005, "JAX101")]


def test_a_file_that_trips_the_core_costs_only_itself(tmp_path: Path) -> None:
    # 2,000 nested conditional expressions: deeper than Python's recursion limit.
    deep = " if c else ".join(["(lambda prim, *a, **k: None)"] * 2000)
    _project(
        tmp_path,
        **{"a.py": BROKEN, "deep.py": f"import jax\np = {deep}\nf = jax.checkpoint(lambda x: x, policy=p)\n"},
    )
    for args in ([], ["a.py", "deep.py"]):  # the whole project, and named files
        done = run_check(tmp_path, *args, "--output-format", "json")
        findings = json.loads(done.stdout)
        assert ("a.py", 5, "JAX101") in {(f["path"], f["line"], f["code"]) for f in findings}
        assert done.returncode in (1, 2)
        if done.returncode == 2:
            assert "internal error" in done.stderr and "Traceback" not in done.stderr


def test_the_users_code_warnings_are_not_printed(tmp_path: Path) -> None:
    # "\\d" warns when parsed: a SyntaxWarning on Python 3.12+, a DeprecationWarning before;
    # `-W always` shows both, as 3.12 shows the first by default.
    (tmp_path / "m.py").write_text('import re\n\nPATTERN = re.compile("\\d+")\n' + BROKEN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-W", "always", "-m", "jax_lsp", "check", "m.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    assert "JAX101" in result.stdout
    assert "Warning" not in result.stderr


def test_rule_prints_the_documentation(tmp_path: Path) -> None:
    done = run_jax_lsp(tmp_path, "rule", "jax104")
    assert done.returncode == 0
    for section in ("# JAX104", "## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in done.stdout
    every = run_jax_lsp(tmp_path, "rule", "--all")
    assert every.returncode == 0
    headings = [line.split()[1] for line in every.stdout.splitlines() if line.startswith("# JAX")]
    assert headings == [c.code for c in CODES.values() if c.family is Family.RULE], headings
    traced = run_jax_lsp(tmp_path, "rule", "JAX190")
    assert traced.returncode == 0 and traced.stdout.startswith("# JAX190 (unpredicted-trace-failure)\n")
    assert traced.stdout.endswith("/docs/rules/JAX190.md\n")
    unknown = run_jax_lsp(tmp_path, "rule", "JAX999")
    assert unknown.returncode == 2 and "unknown rule 'JAX999'" in unknown.stderr


def test_a_policy_module_named_alone_is_checked_against_its_users_in_the_package(tmp_path: Path) -> None:
    # No pyproject.toml, no .git: the project is the folder above the outermost package.
    _project(
        tmp_path,
        **{
            "nets/__init__.py": "",
            "nets/policies.py": "def p(prim, *args, **params):\n    return\n",
            "nets/model.py": "import jax\nfrom nets.policies import p\n\nf = jax.checkpoint(lambda x: x, policy=p)\n",
        },
    )
    for cwd, path in ((tmp_path, "nets/policies.py"), (tmp_path / "nets", "policies.py")):
        done = run_check(cwd, path, "--output-format", "concise")
        assert done.stdout.startswith(f"{path}:2:5: JAX101 "), done.stdout + done.stderr


def test_a_notebook_that_uses_a_policy_module_named_alone_is_found(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    # An image output: its base64 is not searched, and the notebook's cells are still read.
    plot = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo" + "A" * 500}}
    using = "import jax\nfrom policies import p\nf = jax.checkpoint(lambda x: x, policy=p)\n"
    notebook = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    train = {**cell, "source": using.splitlines(True), "outputs": [plot]}
    _project(
        tmp_path,
        **{
            "pyproject.toml": '[project]\nname = "p"\n',
            "policies.py": "def p(prim, *args, **params):\n    return\n",
            "train.ipynb": json.dumps({**notebook, "cells": [train]}),
            "notes.ipynb": json.dumps({**notebook, "cells": [{**cell, "source": ["import policies\n"]}]}),
        },
    )
    done = run_check(tmp_path, "policies.py", "--output-format", "json")
    [finding] = json.loads(done.stdout)
    assert (finding["path"], finding["code"], finding["line"]) == ("policies.py", "JAX101", 2), done.stdout


SITE = "import jax\n\ng = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.dots_saveable)\n"


def _version(python: tuple[int, int]) -> str:
    return f"{python[0]}.{python[1]}"


def _read_by_check(statement: str) -> str:
    """`statement`, made one that check reads: a `def` or `class` whose lines hold no trigger
    is parsed only if a site leads to it, so newer syntax in it is never noticed."""
    return statement + "    policy = None\n" if statement.startswith(("def ", "class ")) else statement


def test_a_project_for_a_newer_python_gets_a_note_not_syntax_errors(tmp_path: Path, newer_syntax) -> None:
    python, statement = newer_syntax
    statement = _read_by_check(statement)
    pyproject = f'[project]\nname = "p"\nrequires-python = ">={_version(python)}"\n'
    _project(
        tmp_path,
        **{
            "pyproject.toml": pyproject,
            "a.py": statement + BROKEN + statement.replace("ValueHolder", "Other"),
            "b.py": statement + SITE + "def broken(:\n    pass\n",
        },
    )
    running = _version(sys.version_info[:2])
    note = (
        f"jax-lsp: note: 4 statements in 2 files were not checked: they need Python {_version(python)} and this is "
        f"Python {running} (run jax-lsp under Python >= {_version(python)} to check them)\n"
    )
    done = run_check(tmp_path, "--output-format", "json")
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [("a.py", "JAX101")]
    assert done.returncode == 1 and done.stderr == note
    clean = run_check(tmp_path, "--ignore", "JAX101")
    assert clean.returncode == 0 and clean.stdout == "All checks passed!\n" and clean.stderr == note


def test_definitions_nothing_leads_to_are_not_parsed(tmp_path: Path, newer_syntax) -> None:
    # `check` reads the statements that hold a trigger and what their sites lead to; a def or
    # class elsewhere is left unparsed: its syntax is for the tools that read all of it.
    python, statement = newer_syntax
    balanced_typo = "def helper(x):\n    retrun x\n"
    _project(tmp_path, **{"b.py": SITE + balanced_typo + statement})
    done = run_check(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "All checks passed!\n", "")
    (tmp_path / "c.py").write_text(SITE + "g = jax.checkpoint(helper, policy=helper)\n" + balanced_typo)
    done = run_check(tmp_path, "--output-format", "concise")
    assert done.returncode == 1 and "c.py:6:12: JAX001 Syntax error" in done.stdout


def test_a_typo_in_a_project_for_this_python_is_a_syntax_error(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "p"\nrequires-python = ">=3.10"\n'
    _project(tmp_path, **{"pyproject.toml": pyproject, "b.py": SITE + "def broken(:\n    pass\n"})
    done = run_check(tmp_path, "--output-format", "concise")
    assert done.returncode == 1 and done.stderr == ""
    assert done.stdout.startswith("b.py:4:12: JAX001 Syntax error: ")


def test_newer_syntax_without_requires_python_is_no_syntax_error(tmp_path: Path, newer_syntax) -> None:
    python, statement = newer_syntax
    statement = _read_by_check(statement)
    _project(
        tmp_path, **{"setup.py": "from setuptools import setup\nsetup(name='p')\n", "b.py": SITE + statement}
    )
    done = run_check(tmp_path)
    assert done.returncode == 0 and done.stdout == "All checks passed!\n"
    assert done.stderr.startswith(
        f"jax-lsp: note: 1 statement in 1 file was not checked: it needs Python {_version(python)}"
    )


def test_the_note_survives_the_result_cache_and_other_processes(tmp_path: Path, newer_syntax) -> None:
    python, statement = newer_syntax
    statement = _read_by_check(statement)
    _project(
        tmp_path, **{"setup.py": "setup(name='p')\n", **{f"m{n}.py": SITE + statement for n in range(30)}}
    )
    note = f"jax-lsp: note: 30 statements in 30 files were not checked: they need Python {_version(python)}"
    # Checked here, answered from the cache, checked on 2 processes.
    for args in (["--jobs", "1"], ["--jobs", "1"], ["--no-cache", "--jobs", "2"]):
        done = run_check(tmp_path, *args)
        assert done.returncode == 0 and done.stderr.startswith(note)
    assert (tmp_path / ".jax-lsp-cache").is_dir()


def test_a_changed_requires_python_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    running = sys.version_info[:2]
    _project(tmp_path, **{"b.py": SITE + "def broken(:\n    pass\n"})
    for requires, code in ((">=3.10", "JAX001"), (f">={_version((running[0], running[1] + 1))}", None)):
        (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "p"\nrequires-python = "{requires}"\n')
        done = run_check(tmp_path, "--output-format", "json")
        assert [f["code"] for f in json.loads(done.stdout)] == ([code] if code else [])


def test_a_jax_below_the_supported_range_is_said_once(tmp_path: Path) -> None:
    import venv

    venv.create(tmp_path / "env", with_pip=False)  # a Python whose jax is 0.4.26, by its metadata
    [site] = (tmp_path / "env").glob("lib/python*/site-packages")
    (site / "jax-0.4.26.dist-info").mkdir()
    (site / "jax-0.4.26.dist-info" / "METADATA").write_text("Name: jax\nVersion: 0.4.26\n")
    project = tmp_path / "project"
    project.mkdir()
    _project(project, **{"m.py": "import jax\nf = jax.checkpoint(lambda x: x, policy=lambda p: True)\n"})
    python = str(tmp_path / "env" / "bin" / "python")
    done = run_check(project, "m.py", "--interpreter", python, "--output-format", "concise")
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("jax 0.4.26 is older than jax 0.4.30, the oldest release jax-lsp knows") == 1
