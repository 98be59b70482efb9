"""`jax-lsp check` run as a real subprocess on the cases in golden/, output compared byte for byte.

Each case is golden/<case>/input/ (copied to a temporary folder, the working folder of the
run); each run's stdout, exit code and stderr are in golden/<case>/<run>.out, and after a --fix
run the files must equal golden/<case>/<run>/. Regenerate with JAX_LSP_UPDATE_GOLDEN=1, then
review the diff before committing it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jax_lsp.cli.output import FORMATS
from jax_lsp.engine.files import CACHE_DIR_NAME
from tests.cli.runner import run_check

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("JAX_LSP_UPDATE_GOLDEN") == "1"

# (case, run, arguments after `jax-lsp check`)
RUNS = [
    *[("rules", output_format, ["--output-format", output_format]) for output_format in FORMATS],
    # Only the policy module named (as pre-commit does): its policies are used in model.py.
    ("rules", "policy_module_only", ["nets/policies.py", "--output-format", "concise"]),
    ("rules", "site_module_only", ["nets/model.py", "--output-format", "concise"]),
    ("clean", "full", []),
    ("clean", "json", ["--output-format", "json"]),
    ("config", "full", []),
    ("config", "cli_select", ["--select", "JAX104", "--output-format", "concise"]),
    ("config", "cli_ignore", ["--ignore", "JAX1", "--output-format", "concise"]),
    ("config", "named_file", ["vendored/third_party.py", "--output-format", "concise"]),
    ("bad_files", "full", []),
    ("bad_files", "json", ["--output-format", "json"]),
    ("fix", "fix", ["--fix"]),
    ("fix", "fix_unsafe", ["--fix", "--unsafe-fixes"]),
    ("fix", "fix_json", ["--fix", "--output-format", "json"]),
    # Notebooks: cells joined as one module (a policy of one cell used in another), IPython syntax
    # opaque, markdown/raw cells and other cell magics ignored, unreadable notebooks reported.
    *[("notebooks", output_format, ["--output-format", output_format]) for output_format in FORMATS],
    ("notebooks", "named_notebook", ["model.ipynb", "--output-format", "concise"]),
    # --fix writes back only the edited cells' sources: the rest of each file is byte-identical.
    ("notebook_fix", "fix", ["--fix"]),
    ("notebook_fix", "fix_unsafe", ["--fix", "--unsafe-fixes", "--output-format", "json"]),
]


def _transcript(done: subprocess.CompletedProcess, args: list[str]) -> str:
    stdout = done.stdout
    if "sarif" in args:  # rule docs change with the rules; test_output checks them
        log = json.loads(stdout)
        driver = log["runs"][0]["tool"]["driver"]
        driver["rules"] = [rule["id"] for rule in driver["rules"]]
        stdout = json.dumps(log, indent=2, ensure_ascii=False) + "\n"
    text = f"{stdout}--- exit code {done.returncode}\n"
    return text + (f"--- stderr\n{done.stderr}" if done.stderr else "")


def _tree(folder: Path) -> dict[str, bytes]:
    """The user's files (the result cache that a check keeps beside them is not one)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and CACHE_DIR_NAME not in p.parts
    }


@pytest.mark.parametrize(("case", "run", "args"), RUNS, ids=[f"{c}-{r}" for c, r, _ in RUNS])
def test_golden(case: str, run: str, args: list[str], tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(GOLDEN / case / "input", work)
    done = run_check(work, *args)
    expected_out = GOLDEN / case / f"{run}.out"
    expected_tree = GOLDEN / case / run
    fixing = "--fix" in args
    if UPDATE:
        expected_out.write_bytes(_transcript(done, args).encode("utf-8"))
        if fixing:
            shutil.rmtree(expected_tree, ignore_errors=True)
            shutil.copytree(work, expected_tree)
    assert _transcript(done, args) == expected_out.read_bytes().decode("utf-8")
    if "json" in args or "sarif" in args:
        json.loads(done.stdout)
    if fixing:
        assert _tree(work) == _tree(expected_tree)
    else:
        assert _tree(work) == _tree(GOLDEN / case / "input"), "a check without --fix changed files"
