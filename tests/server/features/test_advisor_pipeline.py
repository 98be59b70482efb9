"""The editor's advise goes through the one pipeline (issue 49, items 1 and 2), over real LSP:
its cancel stops the budget's fit check and the run on the device at once, their processes
too; a second advise of an unchanged site is answered from the project's cache folder."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from lsprotocol import types

from tests.agent import ADVISOR_FIXTURES, SPINS_AFTER_THE_ESTIMATE, descendants, needs_linux, parent_of
from tests.server.features.test_advisor import ADVISE, RUN, _advise_lenses, _execute
from tests.server.lsp_harness import start_session, until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]


def _model(example: str) -> str:
    text = (ADVISOR_FIXTURES / "mlp.py").read_text(encoding="utf-8")
    text = text.replace("dots_saveable)", f"dots_saveable)  # jax-lsp: example=mlp.py:{example}", 1)
    return text + SPINS_AFTER_THE_ESTIMATE


def _depth(pid: int) -> int:
    """How far below this test process ``pid`` is (the server 1, an agent 2, its child 3)."""
    depth, me = 0, os.getpid()
    while pid not in (me, 0, None) and depth < 16:
        pid, depth = parent_of(pid), depth + 1
    return depth if pid == me else 0


def _agents_work(before: set[int], older_than_s: float = 0) -> set[int]:
    """The processes the agents run for requests (their children and below), those running for
    more than ``older_than_s``."""
    return {pid for pid in descendants() - before if _depth(pid) >= 3 and _age(pid) > older_than_s}


def _age(pid: int) -> float:
    """How long ``pid`` has run, in seconds (0 where it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            started = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="utf-8") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return uptime - started / os.sysconf("SC_CLK_TCK")


async def _cancel_while_it_runs(session, tmp_path, command, arguments, before):
    """Send ``command``; once the estimate's child wrote its mark and a later child spins,
    cancel it: the request fails as cancelled and every child of the agents ends at once."""
    future = session.client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command=command, arguments=arguments),
        msg_id=f"{command}-cancelled",
    )
    await until(lambda: _true((tmp_path / "estimated").exists()), 60)
    # a child that has run for seconds is the later step's, spinning (the estimate's ended)
    await until(lambda: _true(bool(_agents_work(before, older_than_s=3))), 90)
    spinning = _agents_work(before, older_than_s=3)
    began = time.monotonic()
    session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=f"{command}-cancelled"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(future), 10)
    await until(lambda: _true(not (_agents_work(before) & spinning)), 10)
    assert time.monotonic() - began < 10


async def _true(value: bool) -> bool:
    return value


async def test_cancel_stops_the_budgets_fit_check_and_its_compile(tmp_path):
    before = descendants()
    configuration = {"advise": {"budget": "1KiB", "target": "cpu"}}
    async with start_session("vscode", tmp_path, configuration=configuration) as session:
        uri = session.write("mlp.py", _model("slow_example"))
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        await _cancel_while_it_runs(session, tmp_path, ADVISE, lens.command.arguments, before)


async def test_cancel_stops_the_run_on_the_device(tmp_path):
    before = descendants()
    async with start_session("vscode", tmp_path, configuration={"advise": {"target": "cpu"}}) as session:
        uri = session.write("mlp.py", _model("slow_example"))
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        await _cancel_while_it_runs(session, tmp_path, RUN, lens.command.arguments, before)


async def test_a_second_advise_of_an_unchanged_site_is_answered_from_the_cache(tmp_path):
    configuration = {"advise": {"budget": "6KiB", "target": "cpu"}}
    async with start_session("vscode", tmp_path, configuration=configuration) as session:
        uri = session.write("mlp.py", _model("example"))
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        first = await _execute(session, ADVISE, lens.command.arguments)
        assert first["status"] == "ok" and first["fit_check"]["policies"]
        entries = sorted((tmp_path / ".jax-lsp-cache" / "advice").glob("*.json"))
        assert len(entries) == 1 + len(first["fit_check"]["policies"])  # the estimate, each compile
        stamps = [e.stat().st_mtime_ns for e in entries]
        began = time.monotonic()
        again = await _execute(session, ADVISE, lens.command.arguments)
        took = time.monotonic() - began
        assert sorted((tmp_path / ".jax-lsp-cache" / "advice").glob("*.json")) == entries  # nothing new
        assert [e.stat().st_mtime_ns for e in entries] != stamps  # each read (kept longest)
        assert again["policies"] == first["policies"] and again["suggested"] == first["suggested"]
        assert took < 2.0, took
