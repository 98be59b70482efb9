"""Crash hunt: generated modules and packages of real policy idioms, in process and through the CLI.

The modules combine what real code does with remat policies (see idioms.py); each must be
checked, hovered and fixed with no exception and no internal error, and every fix must leave
valid Python. Runs a fixed set of examples (derandomized); JAX_LSP_CRASH_HUNT_EXAMPLES=5000
runs a longer, random hunt over every test of tests/crash_hunt (see checks.hunt_settings).
"""

from __future__ import annotations

import ast
import json

from hypothesis import given

from tests.cli.runner import run_check
from tests.crash_hunt import idioms
from tests.crash_hunt.checks import hunt_settings, survives, written


@hunt_settings(examples=120)
@given(idioms.module())
def test_generated_modules_survive(generated: idioms.Generated):
    survives({"model.py": generated.text})


@hunt_settings(examples=60, cost=3)
@given(idioms.package())
def test_generated_packages_survive(files: dict[str, str]):
    survives(files)


@hunt_settings(examples=4, cost=50)
@given(idioms.package())
def test_the_cli_checks_and_fixes_generated_packages(files: dict[str, str]):
    with written(files) as root:
        done = run_check(root, "--output-format", "json", "--no-cache", ".")
        assert done.returncode in (0, 1), done.stderr
        assert "internal error" not in done.stderr
        assert isinstance(json.loads(done.stdout), list)

        done = run_check(root, "--fix", "--unsafe-fixes", "--output-format", "json", "--no-cache", ".")
        assert done.returncode in (0, 1), done.stderr
        assert "internal error" not in done.stderr
        for name in files:
            ast.parse((root / name).read_text(encoding="utf-8"), filename=name)
