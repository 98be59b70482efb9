"""One advise pipeline (issue 49, items 1 and 2): its steps under their own limits, progress,
cancel, and the cache of answers in the project's cache folder, never stale.

The requests are counted at the service (a real `TraceService`, real agent, real JAX): a
request the cache answers is never sent."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from jax_lsp.trace.advisor.answer_cache import AnswerCache, cache_folder
from jax_lsp.trace.advisor.pipeline import Cancel, StepEvent
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.agent import SPINS_AFTER_THE_ESTIMATE, AgentTraceService, descendants, needs_linux, parent_of

LAYERS = """
import jax.numpy as jnp

WIDTH = 32


def layer(x, w):
    return jnp.tanh(x @ w)
"""
MODEL = """
import jax
import jax.numpy as jnp

from layers import WIDTH, layer


def block(x, w1, w2):
    return jnp.sum(jnp.sin(layer(x, w1) @ w2) ** 2)


step = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def example():
    return (
        jax.ShapeDtypeStruct((8, 16), jnp.float32),
        jax.ShapeDtypeStruct((16, WIDTH), jnp.float32),
        jax.ShapeDtypeStruct((WIDTH, 16), jnp.float32),
    )
"""
SITE_LINE = MODEL.lstrip().splitlines().index(next(x for x in MODEL.splitlines() if "policy=" in x)) + 1


class CountingService(AgentTraceService):
    """The real service, counting the requests it sends (compiles apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict] = []

    def submit(self, method, params, options, **kwargs):
        self.sent.append({**params, **options.to_params()})
        return super().submit(method, params, options, **kwargs)

    def compiles(self) -> int:
        return sum(1 for p in self.sent if p.get("compile"))


@pytest.fixture(scope="module")
def counting():
    service = CountingService()
    yield service
    service.shutdown()


def _write(path, text):
    """Write ``text`` as a user saves a file: a clock tick before advising (an answer is not
    kept where a file it read was written as its request was sent: it may predate the write)."""
    path.write_text(text, encoding="utf-8")
    time.sleep(0.02)


def _project(tmp_path, model=MODEL):
    _write(tmp_path / "pyproject.toml", "[project]\nname = 'p'\n")
    _write(tmp_path / "layers.py", LAYERS.lstrip())
    _write(tmp_path / "model.py", model.lstrip())
    return tmp_path / "model.py"


def _advise(service, model, **more):
    root = model.parent
    return advise(
        service,
        model,
        SITE_LINE,
        example="model.py:example",
        root=root,
        cache=AnswerCache(cache_folder(root)),
        compile=True,
        **more,
    )


def _figures(advice):
    return [(p.policy, p.peak_bytes, p.compiled) for p in advice.policies]


def test_an_unchanged_site_is_answered_from_the_cache_and_an_edited_import_is_not(counting, tmp_path):
    model = _project(tmp_path)
    first = _advise(counting, model)
    assert first.ok and first.compiled, first.message
    candidates = sum(1 for p in first.policies if p.error is None)
    assert counting.compiles() == candidates > 1
    entries = list(cache_folder(tmp_path).glob("*.json"))
    assert len(entries) == 1 + candidates  # the estimate and each candidate's compile
    assert str(tmp_path / "layers.py") in json.loads(entries[0].read_text())["files"]

    counting.sent.clear()
    events: list[StepEvent] = []
    again = _advise(counting, model, progress=events.append)
    assert counting.sent == []  # nothing changed: no request, no compile
    assert _figures(again) == _figures(first)
    assert {e.step for e in events} == {"estimate", "compile"}
    assert all(e.cached for e in events if e.done)

    # the module the example imports changes the step: every candidate is compiled again
    _write(tmp_path / "layers.py", LAYERS.lstrip().replace("WIDTH = 32", "WIDTH = 64"))
    edited = _advise(counting, model)
    assert counting.compiles() == candidates
    assert [p.compiled for p in edited.policies] != [p.compiled for p in first.policies]
    assert all(p.compiled is not None for p in edited.policies if p.error is None)


def test_the_limits_of_a_step_are_part_of_what_decides_its_answer(counting, tmp_path):
    model = _project(tmp_path)
    _advise(counting, model)
    counting.sent.clear()
    _advise(counting, model, options=TraceOptions(compile_memory_mb=8192))
    assert counting.compiles() > 0  # the compiles ran again under the new limit
    assert not [p for p in counting.sent if not p.get("compile")]  # the estimate's limits did not change


def test_each_candidate_compiles_in_a_request_of_its_own_under_the_compiles_limits(counting, tmp_path):
    model = _project(tmp_path)
    counting.sent.clear()
    options = TraceOptions(timeout=20, memory_mb=4096, compile_timeout=123, compile_memory_mb=5000)
    advice = advise(
        counting, model, SITE_LINE, example="model.py:example", root=tmp_path, compile=True, options=options
    )
    estimate, *compiles = counting.sent
    assert (estimate["timeout"], estimate["memory_mb"]) == (20, 4096)
    assert {(p["timeout"], p["memory_mb"]) for p in compiles} == {(123, 5000)}
    assert sorted(p["only"] for p in compiles) == [
        i for i, p in enumerate(advice.policies) if p.error is None
    ]


@needs_linux
def test_a_cancel_stops_the_compile_in_flight_at_once_and_keeps_the_estimate(counting, tmp_path):
    model = _project(tmp_path, MODEL + SPINS_AFTER_THE_ESTIMATE)
    cancel = Cancel()
    kept = []
    before = descendants()
    compiling = threading.Event()

    def progress(event: StepEvent) -> None:
        if event.step == "estimate" and event.done:
            compiling.set()

    def cancel_once_compiling():
        compiling.wait(60)
        time.sleep(1.0)  # the compiles' children are running (and spinning)
        cancel.cancel()

    threading.Thread(target=cancel_once_compiling, daemon=True).start()
    began = time.monotonic()
    advice = advise(
        counting,
        model,
        SITE_LINE,
        example="model.py:slow_example",
        root=tmp_path,
        compile=True,
        cache=AnswerCache(cache_folder(tmp_path)),
        progress=progress,
        cancel=cancel,
        keep=kept.append,
    )
    assert time.monotonic() - began < 30  # not the compile's 300 s timeout
    assert (
        advice.ok
        and advice.policies
        and all(p.peak_bytes is not None for p in advice.policies if p.error is None)
    )
    assert {p.compile_stopped for p in advice.policies if p.error is None} == {"cancelled"}
    assert kept[0].ok and not kept[0].compiled  # the estimate was shown before the compiles
    # the estimate's answer is kept; the cancelled compiles are not
    [entry] = cache_folder(tmp_path).glob("*.json")
    assert json.loads(entry.read_text())["answer"]["status"] == "ok"
    assert _only_agents_left(before, within_s=10)  # each compile's child (its process group) is gone


def _only_agents_left(before: set[int], within_s: float) -> bool:
    """Whether, within ``within_s``, every process this test started is a trace agent (a child
    of this process): the agents' own children have ended."""
    deadline = time.monotonic() + within_s
    while True:
        left = {pid for pid in descendants() - before if parent_of(pid) != os.getpid()}
        if not left or time.monotonic() > deadline:
            return not left
        time.sleep(0.1)
