"""JAX_LSP_EXPECT_JAX=1 (tests/expect_jax.py): skips for a missing jax, flax or equinox fail, in
a pytest run of its own where this Python's jax, flax and equinox are hidden."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

HIDE = """
import sys

for name in ("jax", "flax", "equinox"):
    sys.modules[name] = None  # import raises ModuleNotFoundError
"""

TESTS = """
import sys

import pytest


def test_flax_inside_a_test():
    pytest.importorskip("flax")


def test_this_python_lacks_equinox():
    pytest.skip(f"{sys.executable} lacks equinox, optax")


def test_another_python_lacks_flax():
    pytest.skip("/elsewhere/bin/python lacks flax")


def test_another_reason():
    pytest.skip("no syntax newer than this Python is known")
"""

FOLDER = """
import pytest

pytest.importorskip("jax")


def test_under_jax():
    pass
"""


def run_pytest(folder: Path, expect: str | None) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("JAX_LSP_EXPECT_JAX", None)
    if expect is not None:
        env["JAX_LSP_EXPECT_JAX"] = expect
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.expect_jax", "-p", "no:cacheprovider"]
        + ["-rA", "-q", "--continue-on-collection-errors", str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout + done.stderr


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(HIDE)
    (tmp_path / "test_skips.py").write_text(TESTS)
    (tmp_path / "test_module_level.py").write_text(FOLDER)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "conftest.py").write_text('import pytest\n\npytest.importorskip("equinox")\n')
    (tmp_path / "suite" / "test_in_suite.py").write_text("def test_in_suite():\n    pass\n")
    return tmp_path


def test_skips_for_a_missing_jax_flax_or_equinox_fail_when_jax_is_expected(folder: Path):
    out = run_pytest(folder, "1")
    assert "FAILED test_skips.py::test_flax_inside_a_test" in out, out
    assert "FAILED test_skips.py::test_this_python_lacks_equinox" in out, out
    assert "ERROR test_module_level.py" in out, out
    assert "ERROR suite" in out, out
    assert "JAX_LSP_EXPECT_JAX=1: this run is meant to have jax, flax, equinox" in out
    assert "could not import 'equinox'" in out
    # Another interpreter's packages (a venv holding only JAX), and other reasons, still skip.
    assert "/elsewhere/bin/python lacks flax" in out and "no syntax newer" in out
    assert "2 failed, 2 skipped, 2 errors" in out, out


@pytest.mark.parametrize("expect", [None, "0"])
def test_they_skip_otherwise(folder: Path, expect: str | None):
    out = run_pytest(folder, expect)
    assert "6 skipped" in out and "failed" not in out and "error" not in out, out
