"""The agent's advise child forks a worker for half of the candidates where two CPUs are free to
it: the answer is the one a single process gives, candidate for candidate."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.request import advise
from tests.agent import ADVISOR_FIXTURES, line_of, skip_unless_agent_runs_this_jax

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

FIXTURE = ADVISOR_FIXTURES / "layer_loop.py"


def _serial(params):
    """``driver.advise(params)`` with no worker, in a new interpreter (it changes the folder and
    imports the fixture)."""
    script = (
        "import json, sys\n"
        "from jax_lsp.trace_agent.advisor import driver\n"
        "print(json.dumps(driver.advise(json.loads(sys.argv[1])), default=str))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(advice):
    return [
        (p.policy, p.current, p.device_bytes, p.host_bytes, p.recompute_flops, p.peak_bytes, p.residuals)
        for p in advice.policies
    ]


def test_the_worker_answers_as_one_process_does(service):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the agent forks no worker")
    skip_unless_agent_runs_this_jax()
    line = line_of(FIXTURE)
    advice = advise(service, FIXTURE, line, example="layer_loop.py:example", root=str(ADVISOR_FIXTURES))
    assert advice.ok, advice.message
    assert dict(advice.timings)["worker_cpu_s"] > 0
    params = {
        "path": str(FIXTURE),
        "line": line,
        "root": str(ADVISOR_FIXTURES),
        "example": "layer_loop.py:example",
    }
    raw = _serial(params)
    assert "worker_cpu_s" not in raw["timings"]
    alone = Advice.from_agent(raw, str(FIXTURE), line)
    assert len(advice.policies) > 2
    assert _entries(advice) == _entries(alone)


def test_the_worker_starts_no_backend_of_its_own(tmp_path):
    """The child gives the worker its platform, device and memory kinds: the worker traces its
    share without starting a JAX backend (the child starts the only one)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the agent forks no worker")
    skip_unless_agent_runs_this_jax()
    log = tmp_path / "backends.txt"
    script = (
        "import json, os, sys\n"
        "from jax._src import xla_bridge\n"
        "from jax_lsp.trace_agent.advisor import driver\n"
        "entries = driver.Work.entries\n"
        "def logged(self, *args, **kwargs):\n"
        "    found = entries(self, *args, **kwargs)\n"
        "    with open(sys.argv[2], 'a') as log:\n"
        "        log.write(f'{os.getpid()} {bool(xla_bridge._backends)}\\n')\n"
        "    return found\n"
        "driver.Work.entries = logged\n"
        "result = driver.advise(json.loads(sys.argv[1]), fork=True)\n"
        "print(json.dumps([os.getpid(), 'worker_cpu_s' in result['timings'], len(result['policies'])]))\n"
    )
    params = {
        "path": str(FIXTURE),
        "line": line_of(FIXTURE),
        "root": str(ADVISOR_FIXTURES),
        "example": "layer_loop.py:example",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(params), str(log)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    child, forked, count = json.loads(done.stdout.strip().splitlines()[-1])
    assert forked and count > 2
    started = dict(line.split() for line in log.read_text().splitlines())
    assert started.pop(str(child)) == "True"  # the child's own share, and its backend
    assert list(started.values()) == ["False"]  # the worker's
