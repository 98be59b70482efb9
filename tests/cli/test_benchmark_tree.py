"""The benchmark's generated tree, small: the check finds exactly the mistakes planted in it."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.runner import REPO, run_check


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("every_file_policy", [False, True])
def test_the_check_finds_exactly_the_planted_mistakes(tmp_path: Path, every_file_policy: bool) -> None:
    manifest = _load("gen_tree").generate(tmp_path, 48, 60, 0.5, every_file_policy, seed=1)
    assert manifest["modules"] == 48 and len(manifest["expected"]) >= 10
    assert {code for _, _, code in manifest["expected"]} >= {"JAX101", "JAX102", "JAX103", "JAX104", "JAX108"}
    done = run_check(tmp_path, ".", "--output-format", "json")
    found = Counter((f["path"], f["line"], f["code"]) for f in json.loads(done.stdout))
    assert found == Counter(tuple(e) for e in manifest["expected"])
    assert done.returncode == 1
