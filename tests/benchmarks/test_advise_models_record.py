"""`jax-lsp advise` on public model repositories (benchmarks/advise_models.py): the committed
record covers a namespace-package model, a custom_vjp kernel and a config-chosen policy, every
example's residuals equal JAX's `saved_residuals`, and it was made under a supported JAX by the
harness as it stands. With JAX_LSP_MODELS_RECORD=1, where the repositories and their interpreter
are in the cache folder (a hand step, see the harness), the harness runs again and must agree:
a benchmark of minutes, so a plain run skips it and says how to ask for it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jax_lsp.core.jax_facts import supported_releases
from tests.cli.runner import REPO

RECORD = REPO / "benchmarks" / "records" / "advise_models.json"
REPRODUCE = "JAX_LSP_MODELS_RECORD=1 runs the harness again (minutes) to check the record"


def _harness():
    spec = importlib.util.spec_from_file_location("advise_models", REPO / "benchmarks" / "advise_models.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


harness = _harness()


def _examples() -> set[tuple[str, str, str, str]]:
    """(repository, commit, site, example) of every example the harness runs."""
    return {
        (r.github, r.commit, r.site, f"benchmarks/advise_models/{r.name}.py:{function}")
        for r in harness.REPOSITORIES
        for function in r.examples
    }


def _assert_every_example_equal(record: dict) -> None:
    for entry in record["entries"]:
        why = entry.get("message") or entry.get("first_difference")
        assert entry["status"] == "ok" and entry["equal"], (entry["example"], entry["status"], why)
        assert entry["advisor"] == entry["jax"], entry["example"]


def _record() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8"))


def test_the_record_covers_three_repositories_of_the_three_shapes() -> None:
    record = _record()
    assert record["jax"] in supported_releases()
    assert record["compared"] == list(harness.COMPARED)
    entries = record["entries"]
    assert {(e["repository"], e["commit"], e["site"], e["example"]) for e in entries} == _examples()
    assert len({e["repository"] for e in entries}) >= 3
    assert {shape for e in entries for shape in e["shapes"]} == set(harness.SHAPES)


def test_every_example_of_the_record_lists_jaxs_residuals() -> None:
    _assert_every_example_equal(_record())


def test_each_repository_has_its_example_file_and_functions() -> None:
    for repository in harness.REPOSITORIES:
        source = (harness.EXAMPLES / f"{repository.name}.py").read_text(encoding="utf-8")
        for function in repository.examples:
            assert f"\ndef {function}():" in source, (repository.name, function)
        assert set(repository.shapes) <= set(harness.SHAPES)


def test_residual_lists_are_compared_item_by_item_in_order() -> None:
    f32 = ((2, 3), "float32", "device", "computed")
    arg = ((3,), "float32", "device", "argument")
    literal = ((), "bfloat16", "device", "literal")
    assert harness.first_difference([arg, f32], [arg, f32]) is None
    assert harness.first_difference([f32, arg], [arg, f32]) == (
        "#0: advisor float32[2,3] computed, JAX float32[3] argument"
    )
    assert harness.first_difference([arg], [arg, literal, literal]) == (
        "#1: only JAX lists bfloat16[] literal (2 more)"
    )
    assert harness.jax_kind("from a literal") == "literal"
    assert harness.jax_kind("from a constant") == "constant"
    assert harness.jax_kind("from the argument params['w']") == "argument"
    assert harness.jax_kind("output of dot_general from model.py:9") == "computed"


@pytest.mark.jax
def test_the_harness_reproduces_the_record(tmp_path: Path) -> None:
    if os.environ.get("JAX_LSP_MODELS_RECORD") != "1":
        pytest.skip(REPRODUCE)
    missing = [
        str(r.folder(harness.DEFAULT_CACHE))
        for r in harness.REPOSITORIES
        if not r.folder(harness.DEFAULT_CACHE).is_dir()
    ]
    python = harness.DEFAULT_CACHE / "venv" / "bin" / "python"
    if missing or not python.exists():
        pytest.skip(
            f"the model corpus is not in {harness.DEFAULT_CACHE} (missing: {', '.join(missing) or python}):"
            " benchmarks/advise_models.py says how to make it"
        )
    record = tmp_path / "record.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "advise_models.py"), "--record", str(record)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert record.exists(), done.stdout + done.stderr
    fresh = json.loads(record.read_text(encoding="utf-8"))
    assert [e["example"] for e in fresh["entries"]] == [e["example"] for e in _record()["entries"]]
    _assert_every_example_equal(fresh)
    assert done.returncode == 0, done.stdout
