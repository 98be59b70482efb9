"""What every test shares: its caches and number of workers under pytest-xdist, the markers of
the slow folders, and fixtures of the core, CLI and server tests."""

from __future__ import annotations

import ast
import compileall
import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.expect_jax"]


def _caches_per_worker() -> None:
    """Under pytest-xdist, each worker (and what it starts) keeps its own caches: jedi writes
    parso's pickles under XDG_CACHE_HOME without a lock, so a worker could read one that another
    is still writing. pre-commit keeps its shared store: it locks it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        caches = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        os.environ.setdefault("PRE_COMMIT_HOME", os.path.join(caches, "pre-commit"))
        os.environ["XDG_CACHE_HOME"] = os.path.join(caches, "jax-lsp-tests", worker)


_caches_per_worker()


def _bytecode_kept() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (as in many container images), each server, agent and
    CLI the tests start would compile jax_lsp's sources again, and each worker would rewrite
    every test module's asserts again (5 of its 14 seconds of collection). So jax_lsp is
    byte-compiled once, before the workers start, and the tests' own processes keep what pytest
    rewrites; the processes they start still write no bytecode (no __pycache__ is left beside the
    user code an agent imports)."""
    sys.dont_write_bytecode = False
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        compileall.compile_dir(Path(__file__).parents[1] / "jax_lsp", quiet=1)


_bytecode_kept()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`pytest -n auto`: half again as many workers as CPUs. Many tests wait on the server, the
    editor or the trace agent they started, which leaves CPUs idle with one worker each: on 2
    CPUs the suite took 7.6 and 8.1 minutes with 2 workers, 6.2 with 3."""
    return max(1, (os.cpu_count() or 1) * 3 // 2)


# The folders whose every test runs real JAX or drives a real editor: `pytest -m "not editor and
# not jax"` leaves them out (pyproject.toml registers the markers; tests elsewhere mark themselves).
FOLDER_MARKERS = {"trace": "jax", "editors": "editor", "jupyter": "editor"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        marker = FOLDER_MARKERS.get(item.path.relative_to(tests).parts[0])
        if marker:
            item.add_marker(marker)


# (the oldest Python that parses it, a top-level statement in its syntax)
NEWER_SYNTAX = [
    ((3, 12), "class ValueHolder[ValueType](Protocol):\n    value: ValueType\n"),
    ((3, 13), "def loop[T = int](x: T) -> T:\n    return x\n"),
    ((3, 14), 'greeting = t"hello {name}"\n'),
]


@pytest.fixture
def newer_syntax() -> tuple[tuple[int, int], str]:
    """A top-level statement that only a newer Python than the running one parses, and that Python."""
    for python, statement in NEWER_SYNTAX:
        if python > sys.version_info[:2]:
            return python, statement
    pytest.skip("no syntax newer than this Python is known")


def parses(text: str) -> bool:
    """Whether the running Python parses `text`."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True
