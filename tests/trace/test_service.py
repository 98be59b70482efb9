"""Bounded runs: timeouts, memory limits, cancellation, concurrency, and no process left behind."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from jax_lsp.core import jax_facts
from jax_lsp.core.jax_facts import installed_jax_version
from jax_lsp.trace.options import TraceOptions
from tests.agent import AGENT_PYTHON, POLICY_MODULE, descendants, line_of, needs_linux
from tests.agent import AgentTraceService as TraceService

pytestmark = needs_linux


def _module(write, extra="", helper=None):
    if helper:
        write("helper.py", helper)
    return write("model.py", POLICY_MODULE.format(extra=extra))


def _wait_until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_infinite_loop_at_import_is_killed_at_the_timeout(service, write):
    path = _module(write, "import helper", helper="while True:\n    pass\n")
    service.agent()  # warm: the agent itself is expected to stay
    before = descendants()
    started = time.monotonic()
    result = service.trace(path, line_of(path, "def policy"), options=TraceOptions(timeout=2))
    elapsed = time.monotonic() - started
    assert result.status == "timeout"
    assert "2 s timeout" in result.message
    assert 2 <= elapsed < 6
    assert _wait_until(lambda: descendants() <= before)


def test_memory_hog_is_stopped_by_the_memory_limit(service, write):
    path = _module(write, "import helper", helper="HOG = bytearray(3 * 1024 ** 3)\n")
    result = service.trace(path, line_of(path, "def policy"), options=TraceOptions(memory_mb=2048))
    assert result.status == "memory"
    assert "2048 MiB" in result.message
    # The same limit leaves room for a trace without the hog, and the agent survived its child.
    ok = _module(write)
    assert service.trace(ok, line_of(ok, "def policy"), options=TraceOptions(memory_mb=2048)).ok


def test_address_space_reserved_and_never_written_is_not_memory(service, write):
    """Runtimes reserve address space they never use (libtpu, CUDA, XLA's thread stacks): the
    limit is on what a trace writes, so a reservation far past it leaves the trace working."""
    reserve = "import mmap\n\nRESERVED = mmap.mmap(-1, 16 * 1024 ** 3, prot=mmap.PROT_READ)\n"
    write("helper.py", reserve)
    policy = POLICY_MODULE.format(extra="import helper").replace(
        "prim.name ==", "len(helper.RESERVED) and prim.name =="
    )
    path = write("model.py", policy)
    result = service.trace(path, line_of(path, "def policy"), options=TraceOptions(memory_mb=2048))
    assert result.ok, result.message
    assert {d.primitive for d in result.decisions if d.decision == "saved"} == {"sin"}


def test_two_concurrent_traces(service, write):
    first = write("a.py", POLICY_MODULE.format(extra=""))
    second = write("b.py", POLICY_MODULE.format(extra="").replace('"sin"', '"cos"'))
    jobs = [service.submit_trace(p, line_of(p, "def policy")) for p in (first, second)]
    results = [job.result(60) for job in jobs]
    assert [r.status for r in results] == ["ok", "ok"]
    saved = [{d.primitive for d in r.decisions if d.decision == "saved"} for r in results]
    assert saved == [{"sin"}, {"cos"}]


def test_cancel_kills_the_run(service, write):
    path = _module(write, "import helper", helper="while True:\n    pass\n")
    service.agent()
    before = descendants()
    job = service.submit_trace(path, line_of(path, "def policy"), options=TraceOptions(timeout=60))
    assert _wait_until(lambda: len(descendants() - before) >= 1, 10)
    started = time.monotonic()
    job.cancel()
    result = job.result(10)
    assert result.status == "cancelled"
    assert time.monotonic() - started < 3
    assert _wait_until(lambda: descendants() <= before)


def test_a_new_trace_of_the_same_policy_cancels_the_old_one(service, write):
    path = _module(write, "import helper", helper="while True:\n    pass\n")
    line = line_of(path, "def policy")
    old = service.submit_trace(path, line, options=TraceOptions(timeout=60))
    new = service.submit_trace(path, line, options=TraceOptions(timeout=1))
    assert old.result(10).status == "cancelled"
    assert new.result(10).status == "timeout"


@pytest.mark.parametrize("method", ["trace", "advise"])
def test_the_agent_refuses_a_request_without_its_limits(service, write, method):
    """The agent states no timeout or memory limit of its own: the host sends them every time."""
    path = _module(write)
    _, reply = service.agent().request(method, {"path": path, "line": line_of(path, "def policy")})
    answer = reply.result(30)
    assert answer["status"] == "error"
    assert answer["message"] == f"A {method!r} request must give a number `timeout` and `memory_mb`"


def test_shutdown_leaves_no_process(write):
    path = _module(write, "import helper", helper="while True:\n    pass\n")
    before = descendants()
    svc = TraceService()
    job = svc.submit_trace(path, line_of(path, "def policy"), options=TraceOptions(timeout=60))
    assert _wait_until(lambda: len(descendants() - before) >= 2, 30)  # the agent and its child
    svc.shutdown()
    assert job.result(10).status in ("crashed", "cancelled")
    assert _wait_until(lambda: descendants() <= before)


def test_children_die_with_a_killed_agent(write):
    path = _module(write, "import helper", helper="while True:\n    pass\n")
    svc = TraceService()
    try:
        job = svc.submit_trace(path, line_of(path, "def policy"), options=TraceOptions(timeout=60))
        agent = svc.agent()
        assert _wait_until(lambda: descendants(agent.proc.pid), 30)
        children = descendants(agent.proc.pid)
        os.kill(agent.proc.pid, signal.SIGKILL)
        assert job.result(10).status == "crashed"
        assert _wait_until(
            lambda: not any(os.path.exists(f"/proc/{pid}") and _alive(pid) for pid in children)
        )
    finally:
        svc.shutdown()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_agent_and_children_die_with_the_host(write, tmp_path):
    """The host (a server) is SIGKILLed mid-trace: its agent and the agent's child follow."""
    path = _module(write, "import helper", helper="while True:\n    pass\n")
    host = textwrap.dedent(f"""
        import sys, time
        from jax_lsp.trace import TraceService
        from jax_lsp.trace.options import TraceOptions
        svc = TraceService()
        job = svc.submit_trace({path!r}, {line_of(path, "def policy")}, options=TraceOptions(timeout=60))
        print(svc.agent().proc.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", host], stdout=subprocess.PIPE, text=True)
    try:
        agent_pid = int(proc.stdout.readline())
        assert _wait_until(lambda: descendants(agent_pid), 30)
        family = {agent_pid} | descendants(agent_pid)
        proc.kill()
        proc.wait()
        assert _wait_until(lambda: not any(_alive(pid) for pid in family), 10)
    finally:
        proc.kill()


def test_interpreter_without_jax(service, write, tmp_path):
    wrapper = tmp_path / "python-without-jax"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    path = _module(write)
    result = service.trace(path, line_of(path, "def policy"), interpreter=str(wrapper))
    assert result.status == "no_jax"
    assert "jax is not installed in" in result.message
    assert "-m pip install jax" in result.message


def test_interpreter_that_does_not_exist(service, write):
    path = _module(write)
    result = service.trace(path, 3, interpreter="/nonexistent/python3")
    assert result.status == "error"
    assert "/nonexistent/python3" in result.message


@pytest.mark.parametrize("exit_code", ["os._exit(3)", "os.kill(os.getpid(), 9)"])
def test_a_child_that_dies_without_a_result(service, write, exit_code):
    path = _module(write, "import helper", helper=f"import os\n{exit_code}\n")
    result = service.trace(path, line_of(path, "def policy"))
    assert result.status == "crashed"
    assert ("code 3" in result.message) if "_exit" in exit_code else ("SIGKILL" in result.message)


def test_jax_older_than_the_oldest_supported_release(write, monkeypatch):
    """Below the supported range (here the range is moved past the agent's real JAX): no trace
    runs, and the error says which jax, where, and what to do."""
    real = jax_facts._data()
    moved = {
        "releases": ["99.0"],
        "python": [{"from": "99.0", "to": "99.0", "value": "3.12"}],
        "facts": {
            name: [{"from": "99.0", "to": "99.0", "value": ranges[-1]["value"]}]
            for name, ranges in real["facts"].items()
        },
    }
    monkeypatch.setattr(jax_facts, "_data", lambda: moved)
    jax_facts._facts.cache_clear()
    path = _module(write)
    svc = TraceService()
    try:
        result = svc.trace(path, line_of(path, "def policy"))
    finally:
        svc.shutdown()
        jax_facts._facts.cache_clear()
    assert result.status == "error"
    assert result.message.startswith(f"jax {installed_jax_version(AGENT_PYTHON)} in {AGENT_PYTHON} is older")
    assert "older than jax 99.0, the oldest release jax-lsp traces under" in result.message
    assert "-m pip install -U 'jax>=99.0'" in result.message
