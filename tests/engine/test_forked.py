"""engine.forked: items made by a forked process, and made here whenever they cannot be.

Each case runs in a fresh interpreter: the test process has threads (JAX's), and a process of
more than one thread is never forked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from jax_lsp.engine.forked import InChild
from tests.cli.runner import REPO

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="a child is forked on Linux only")


def _run(script: str) -> object:
    """What `script` (with os, time and InChild imported) prints as JSON on its last line."""
    head = "import json, os, threading, time\nfrom jax_lsp.engine.forked import InChild\n"
    done = subprocess.run(
        [sys.executable, "-c", head + textwrap.dedent(script)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


@linux_only
def test_the_items_are_made_by_a_child_and_come_back_in_order() -> None:
    result = _run("""
        def work():
            yield os.getpid()
            yield from ({"n": n, "data": ["x" * 200_000, "é"]} for n in range(3))  # more than a pipe holds

        with InChild(work) as child:
            pid, *rest = child.items()
        print(json.dumps([pid != os.getpid(), rest == [{"n": n, "data": ["x" * 200_000, "é"]} for n in range(3)]]))
    """)
    assert result == [True, True]


def test_without_fork_or_beside_another_thread_the_items_are_made_here() -> None:
    with InChild(lambda: iter([os.getpid()]), fork=False) as child:
        assert list(child.items()) == [os.getpid()]
    result = _run("""
        stop = threading.Event()
        threading.Thread(target=stop.wait).start()
        with InChild(lambda: iter([os.getpid()])) as child:
            here = list(child.items()) == [os.getpid()]
        stop.set()
        print(json.dumps(here))
    """)
    assert result is True


@linux_only
def test_when_the_child_fails_the_items_it_did_not_send_are_made_here() -> None:
    result = _run("""
        parent = os.getpid()

        def work():
            for n in range(4):
                if n == 2 and os.getpid() != parent:
                    raise RuntimeError("fails in the child after two items")
                yield [n, os.getpid() == parent]

        with InChild(work) as child:
            print(json.dumps(list(child.items())))
    """)
    assert result == [[0, False], [1, False], [2, True], [3, True]]


@linux_only
@pytest.mark.parametrize("taken", [0, 1], ids=["none taken", "one taken"])
def test_a_child_whose_items_are_not_all_taken_is_stopped(taken: int) -> None:
    result = _run(f"""
        def slow():
            yield 1
            time.sleep(60)
            yield 2

        started = time.monotonic()
        with InChild(slow) as child:
            pid = child._child[0]
            items = child.items()
            for _ in range({taken}):
                next(items)
        try:
            os.waitpid(pid, 0)
            reaped = False
        except ChildProcessError:
            reaped = True  # no process left behind
        print(json.dumps([reaped, time.monotonic() - started < 30]))
    """)
    assert result == [True, True]


@linux_only
def test_turns_hand_each_number_to_one_process_the_one_that_asks_first() -> None:
    result = _run("""
        from jax_lsp.engine.forked import Turns

        with Turns(400) as turns:
            mine = []
            def theirs():
                taken = []
                for n in turns:
                    taken.append(n)
                    time.sleep(0.001)
                return [taken]
            numbers = iter(turns)
            mine.append(next(numbers))  # the parent takes one, then forks
            with InChild(theirs) as child:
                for n in numbers:
                    mine.append(n)
                    time.sleep(0.001)
                (taken,) = child.items()
        print(json.dumps([mine, taken]))
    """)
    mine, taken = result
    assert sorted(mine + taken) == list(range(400))  # each number once, none lost
    assert mine and taken  # both took some
    assert mine == sorted(mine) and taken == sorted(taken)  # in order, each


def test_no_more_turns_than_a_pipe_holds() -> None:
    from jax_lsp.engine.forked import MAX_TURNS, Turns

    with Turns(MAX_TURNS) as turns:
        assert sum(1 for _ in turns) == MAX_TURNS
    with pytest.raises(ValueError):
        Turns(MAX_TURNS + 1)
