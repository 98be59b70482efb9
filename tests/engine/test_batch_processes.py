"""A whole-tree check shared with forked processes (`check --jobs N`): the same findings and
cache as one process, the work of the whole project made once, and a process that fails
made up for.

Each check runs in a fresh interpreter, as the command line does: the test process has threads
(JAX's), and a process of more than one thread forks none (engine.forked)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jax_lsp.engine.batch import PARALLEL_MIN_FILES, PARALLEL_MIN_READ_BYTES
from tests.cli.runner import REPO
from tests.engine.test_batch import _check, _tree

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="processes are forked on Linux only")

# Runs check_paths on a tree; each function named on the command line (`module:name` or
# `module:Class.name`) first writes a line `PID NAME FILE` to the log (FILE: the name of its first
# path argument). `slow_parent` seconds of sleep follow each file the first process checks (so
# that the forked ones surely take some), `fail_child` makes each forked process exit at its
# first file.
_CHECK = """
import importlib, json, os, sys, time
from pathlib import Path

root, cache, jobs, log, slow_parent, fail_child, *watched = sys.argv[1:]
parent = os.getpid()


def watch(target):
    module_name, _, name = target.partition(":")
    owner_name, _, attribute = name.rpartition(".")
    module = importlib.import_module(module_name)
    owner = getattr(module, owner_name) if owner_name else module
    real = getattr(owner, attribute)

    def noting(*args, **kwargs):
        path = next((a for a in args if isinstance(a, (str, Path))), "")
        with open(log, "a") as written:
            written.write(f"{os.getpid()} {attribute} {Path(path).name}\\n")
        return real(*args, **kwargs)

    setattr(owner, attribute, noting)


from jax_lsp.engine import Workspace, batch

real_check_own = batch.check_own


def check_own(*args, **kwargs):
    if os.getpid() != parent and fail_child == "1":
        os._exit(3)
    found = real_check_own(*args, **kwargs)
    if os.getpid() == parent:
        time.sleep(float(slow_parent))
    return found


batch.check_own = check_own
for target in watched:
    watch(target)
found = batch.check_paths(Workspace([Path(root)]), [Path(root)], Path(cache) if cache else None, int(jobs))
print(json.dumps([parent, {Path(p).name: [[f.code, f.span.start.line] for f in fs] for p, fs in found.items()}]))
"""


def _check_fresh(
    root: Path,
    log: Path,
    *watched: str,
    cache: Path | None = None,
    jobs: int = 2,
    slow_parent: float = 0.0,
    fail_child: bool = False,
) -> tuple[dict[str, list[tuple[str, int]]], list[tuple[bool, str, str]]]:
    """The findings of a check in a fresh interpreter, and the log of the watched calls, each
    (made in the first process, function, file)."""
    log.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHECK), str(root), str(cache or ""), str(jobs), str(log)]
        + [str(slow_parent), "1" if fail_child else "0", *watched],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    parent, found = json.loads(done.stdout.splitlines()[-1])
    calls = [line.split(" ", 2) for line in log.read_text().splitlines()]
    return (
        {name: [(code, line) for code, line in rows] for name, rows in found.items()},
        [(int(pid) == parent, function, name) for pid, function, name in calls],
    )


def test_processes_find_what_one_process_finds(tmp_path):
    root = _tree(tmp_path, users=PARALLEL_MIN_FILES + 4)
    found, calls = _check_fresh(root, tmp_path / "log", "jax_lsp.engine.batch:check_own", slow_parent=0.05)
    assert (
        found == _check(root, None, jobs=1) == {"policies.py": [("JAX101", 0)], "local.py": [("JAX101", 1)]}
    )
    checked = [name for _, _, name in calls]
    assert (
        len(set(checked)) == len(checked) == PARALLEL_MIN_FILES + 5
    )  # each file that could hold a site, once
    assert any(not here for here, _, _ in calls)  # some by a forked process


def test_processes_read_a_large_new_tree_and_the_cache_keeps_what_they_read(tmp_path):
    root, cache = _tree(tmp_path, users=PARALLEL_MIN_FILES), tmp_path / "cache"
    for n in range(4):  # a large tree, as many bytes of it as starts processes to read it
        (root / f"plain{n}.py").write_text("x = 1\n" * (PARALLEL_MIN_READ_BYTES // 4 // 6 + 1))
    expected = _check(root, None, jobs=1)
    assert expected == {"policies.py": [("JAX101", 0)], "local.py": [("JAX101", 1)]}
    read = "jax_lsp.engine.project_files:ProjectFiles.read"
    found, reads = _check_fresh(root, tmp_path / "log", read, cache=cache, slow_parent=0.05)
    assert found == expected
    assert any(not here for here, _, _ in reads)  # a forked process read files
    found, reads = _check_fresh(root, tmp_path / "log", read, cache=cache)
    assert found == expected
    assert reads == []  # each file's time, size and digest were kept, though read elsewhere


def test_the_processes_are_forked_once_a_file_is_checked_and_keep_what_it_made(tmp_path):
    """The largest file, checked first here, asks where the project turns on the new remat (its
    policy is a function: JAX115): the processes forked then have the answer, and ask nobody
    (each of them searched the whole project again, when they were started before any check)."""
    root = tmp_path / "proj"
    root.mkdir()
    callable_policy = "import jax\nf = jax.checkpoint(abs, policy=lambda prim, *a, **k: True)\n"
    (root / "largest.py").write_text(callable_policy + "# padding\n" * 200)
    for n in range(PARALLEL_MIN_FILES + 8):
        (root / f"site{n}.py").write_text(callable_policy)
    switch_search = "jax_lsp.engine.project_facts:_first_switch"
    found, calls = _check_fresh(
        root, tmp_path / "log", switch_search, "jax_lsp.engine.batch:check_own", slow_parent=0.05
    )
    assert found == _check(root, None, jobs=1) == {}
    assert [(here, function) for here, function, _ in calls if function == "_first_switch"] == [
        (True, "_first_switch")
    ]
    assert calls[0] == (True, "check_own", "largest.py")
    assert any(not here for here, function, _ in calls if function == "check_own")


def test_the_files_of_a_process_that_fails_are_checked_here(tmp_path):
    root = _tree(tmp_path, users=PARALLEL_MIN_FILES + 4)
    found, calls = _check_fresh(
        root, tmp_path / "log", "jax_lsp.engine.batch:check_own", slow_parent=0.05, fail_child=True
    )
    assert found == {"policies.py": [("JAX101", 0)], "local.py": [("JAX101", 1)]}
    assert any(not here for here, _, _ in calls)  # a forked process began a file, and failed
    checked_here = {name for here, _, name in calls if here}
    users = {f"user{n}.py" for n in range(PARALLEL_MIN_FILES + 4)}
    assert checked_here == {"local.py", *users}
