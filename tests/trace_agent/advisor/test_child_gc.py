"""The advise child runs with the cyclic GC off (``handlers.advise``): it exits once it answered,
so a pass would only scan the objects the agent already had."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.trace.advisor.request import advise
from tests.agent import line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

MODEL = """
    import gc
    import os

    import jax
    import jax.numpy as jnp


    def layer(x, w):
        return jnp.sum(jnp.tanh(x @ w))


    block = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)


    def example():
        with open(os.path.join(os.path.dirname(__file__), "gc.log"), "a") as log:
            log.write(f"{gc.isenabled()}\\n")
        x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
        return {"fn": block, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
"""


def test_the_example_runs_with_the_cyclic_gc_off(tmp_path, service):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MODEL).lstrip(), encoding="utf-8")
    advice = advise(service, path, line_of(path), example="model.py:example", root=tmp_path)
    assert advice.ok, advice.message
    assert (tmp_path / "gc.log").read_text().split() == ["False"]
