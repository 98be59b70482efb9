"""`jax-lsp advise` through the one pipeline (issue 49, items 1 and 2), as a user runs it in a
terminal: Ctrl-C stops the compile in flight at once, its processes too, and the estimate
that ended is kept; run again with nothing changed, the command starts no agent."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.agent import (
    ADVISOR_FIXTURES,
    SPINS_AFTER_THE_ESTIMATE,
    agent_options,
    descendants,
    line_of,
    needs_linux,
)

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux]  # runs the trace agent under real JAX; reads /proc


def _project(tmp_path, extra: str = ""):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    model = tmp_path / "mlp.py"
    model.write_text((ADVISOR_FIXTURES / "mlp.py").read_text(encoding="utf-8") + extra, encoding="utf-8")
    time.sleep(0.02)  # a clock tick: an answer is not kept for a file written as its request is sent
    return model


def _advise(model, example: str, *more: str) -> list[str]:
    site = f"{model}:{line_of(model)}"
    return [sys.executable, "-m", "jax_lsp", "advise", site, "--example", example, *agent_options(), *more]


def _entries(tmp_path):
    return [json.loads(p.read_text()) for p in (tmp_path / ".jax-lsp-cache" / "advice").glob("*.json")]


def test_ctrl_c_stops_the_compile_at_once_and_keeps_the_estimate(tmp_path):
    model = _project(tmp_path, SPINS_AFTER_THE_ESTIMATE)
    before = descendants()
    command = _advise(model, "mlp.py:slow_example", "--compile", "--output-format", "json")
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "estimated").exists() or not _entries(tmp_path):
            assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
            time.sleep(0.1)
        time.sleep(2.0)  # the compiles' children spin
        assert len(descendants() - before) >= 3  # the command, its agent, a compile's child at least
        process.send_signal(signal.SIGINT)  # Ctrl-C
        began = time.monotonic()
        out, err = process.communicate(timeout=15)
        assert time.monotonic() - began < 10, err
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert b"cancelled" in err
    deadline = time.monotonic() + 10
    while descendants() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants() <= before  # the agent and every child, gone
    [estimate] = _entries(tmp_path)  # the step that ended is kept; no compile was
    assert estimate["answer"]["status"] == "ok" and estimate["answer"]["policies"]


def test_advise_again_with_nothing_changed_starts_no_agent(tmp_path):
    model = _project(tmp_path)
    command = _advise(model, "mlp.py:example", "--compile", "--output-format", "json")
    first, first_children = _run_watching_children(command, tmp_path)
    assert any("agent.py" in c for c in first_children)  # the check sees the agent
    again, children = _run_watching_children(command, tmp_path)
    assert not any("agent.py" in c for c in children), children
    assert json.loads(again)["policies"] == json.loads(first)["policies"]


def _run_watching_children(command: list[str], cwd) -> tuple[str, set[str]]:
    """The command's output, and the command lines of every process it started (polled)."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    seen: set[str] = set()
    while process.poll() is None:
        for pid in descendants(process.pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    seen.add(handle.read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
        time.sleep(0.005)
    out = process.stdout.read().decode() if process.stdout is not None else ""
    assert process.returncode == 0, out
    return out, seen
