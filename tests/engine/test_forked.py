"""engine.forked: work done by a forked process, and done here whenever it cannot be."""

from __future__ import annotations

import os
import sys
import time

import pytest

from jax_lsp.engine.forked import InChild

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="a child is forked on Linux only")


@linux_only
def test_the_work_is_done_by_a_child_and_its_result_comes_back() -> None:
    parent = os.getpid()
    with InChild(lambda: {"pid": os.getpid(), "data": [b"\x00" * 200_000, "é"]}) as child:
        result = child.result()
    assert result["pid"] != parent
    assert result["data"] == [b"\x00" * 200_000, "é"]  # more than a pipe holds at once


def test_without_fork_or_when_the_child_fails_the_work_is_done_here() -> None:
    parent = os.getpid()
    with InChild(lambda: os.getpid(), fork=False) as child:
        assert child.result() == parent

    def here_only() -> int:
        if os.getpid() != parent:
            raise RuntimeError("fails in the child")
        return parent

    with InChild(here_only) as child:
        assert child.result() == parent


@linux_only
def test_a_child_whose_result_is_not_asked_for_is_stopped() -> None:
    started = time.monotonic()
    with pytest.raises(KeyError):
        with InChild(lambda: time.sleep(60)) as child:
            assert child._child is not None
            pid = child._child[0]
            raise KeyError("the caller fails")
    assert time.monotonic() - started < 30
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # reaped: no process left behind
