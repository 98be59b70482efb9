"""core.guard: a tree too deep for the stack is walked again on a deep one, without deadlock."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from jax_lsp.core.guard import WorkLock, deep
from jax_lsp.engine import Workspace

TIMEOUT_S = 60


def finishes(function) -> dict:
    """Run `function` on a daemon thread; a deadlock fails the test instead of hanging it."""
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(value=function()), daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    assert not thread.is_alive(), "deadlocked"
    return outcome


def test_the_deep_worker_enters_the_lock_its_caller_holds():
    lock = WorkLock()

    def down(n: int) -> int:
        with lock:
            return 0 if n == 0 else 1 + down(n - 1)

    depth = 3 * sys.getrecursionlimit()

    def walk() -> int:
        with lock:
            return deep(lambda: down(depth))

    assert finishes(walk)["value"] == depth


def test_the_lock_still_excludes_other_threads():
    lock, inside = WorkLock(), threading.Event()

    def enter() -> None:
        with lock:
            inside.set()

    with lock:
        with lock:  # re-entrant for its holder
            other = threading.Thread(target=enter)
            other.start()
            assert not inside.wait(0.2)
        assert not inside.wait(0.1)
    assert inside.wait(TIMEOUT_S)
    other.join()


def test_a_deep_expression_whose_names_are_looked_up_in_the_workspace(tmp_path: Path):
    # Found by the crash hunt: a policy returning `np.prod(...) + a0 + ... + a1199 > 8` hung
    # for ever. Classifying it recursed too deep, so it ran again on a deep-stack thread, and
    # that thread waited for the workspace lock held by the caller waiting for it (to look up
    # the module `numpy`).
    terms = " + ".join(["np.prod(avals[0].shape)"] + [f"a{i}" for i in range(1200)])
    path = tmp_path / "m.py"
    path.write_text(
        "import jax\nimport numpy as np\n\n\n"
        f"def policy(prim, *avals, **params):\n    return {terms} > 8\n\n\n"
        "f = jax.checkpoint(abs, policy=policy)\n"
    )
    workspace = Workspace([tmp_path])
    findings = finishes(lambda: workspace.check_file(path))["value"]
    assert [f.code for f in findings] == ["JAX103"]
    assert workspace.take_internal_errors() == []


def test_hover_on_a_policy_with_a_2500_branch_elif_chain(tmp_path: Path):
    # Found by the crash hunt: describing its returns recursed through the `elif`s
    # (RecursionError, logged as an error by the server's hover).
    branches = "".join(f"    elif prim.name == 'op{i}':\n        return True\n" for i in range(2_500))
    path = tmp_path / "m.py"
    path.write_text(
        "import jax\n\n\ndef policy(prim, *avals, **params):\n    if avals:\n        return False\n"
        f"{branches}    return None\n\n\nf = jax.checkpoint(abs, policy=policy)\n"
    )
    workspace = Workspace([tmp_path])
    description = finishes(lambda: workspace.describe_policy(path, 3, 5))["value"]
    assert description.name == "policy"
    verdicts = [r.verdict.split(":")[0] for r in description.returns]
    assert verdicts == ["a bool (True saves, False recomputes)"] * 2_501 + ["None"]
