"""An executable a compile keeps is loaded for the run only where it is the run's own step on the
run's own devices, under the same JAX; anything else loads nothing, and the run compiles."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

from jax_lsp.trace_agent.advisor import kept  # noqa: E402 (after the skip)

STEP = """
import jax
import jax.numpy as jnp


def step(w, x):
    def loss(w):
        layer = jax.checkpoint(lambda w, x: jnp.tanh(x @ w) @ w.T, policy=jax.checkpoint_policies.{policy})
        return jnp.sum(layer(w, x) ** 2)

    return jax.grad(loss)(w)
"""


def _step(tmp_path, policy="dots_saveable"):
    namespace: dict = {}
    exec(compile(STEP.format(policy=policy), str(tmp_path / "step.py"), "exec"), namespace)
    return namespace["step"]


def _inputs(rows=16):
    return [jax.random.normal(jax.random.key(0), (32, 32)), jax.random.normal(jax.random.key(1), (rows, 32))]


def test_an_executable_kept_in_another_process_loads_and_computes_the_step(tmp_path):
    path = tmp_path / "kept.pickle"
    (tmp_path / "step.py").write_text(STEP.format(policy="dots_saveable"))
    keeper = textwrap.dedent(f"""
        import sys
        import jax.numpy as jnp
        import jax
        sys.path[:0] = [{str(tmp_path)!r}]
        from step import step
        from jax_lsp.trace_agent.advisor import kept
        leaves = [jnp.ones((32, 32)), jnp.ones((16, 32))]
        executable = jax.jit(step).lower(*leaves).compile()
        assert kept.keep({str(path)!r}, executable, step, leaves)
    """)
    subprocess.run([sys.executable, "-c", keeper], check=True, timeout=120)
    step, inputs = _step(tmp_path), _inputs()
    loaded = kept.load(str(path), step, inputs)
    assert loaded is not None
    np.testing.assert_array_equal(np.asarray(loaded(*inputs)), np.asarray(jax.jit(step)(*inputs)))


def test_another_program_other_shapes_or_another_jax_load_nothing(tmp_path):
    path = str(tmp_path / "kept.pickle")
    step, inputs = _step(tmp_path), _inputs()
    assert kept.keep(path, jax.jit(step).lower(*inputs).compile(), step, inputs)
    assert kept.load(path, step, inputs) is not None
    assert kept.load(path, _step(tmp_path, "nothing_saveable"), inputs) is None  # the run traced another step
    assert kept.load(path, step, _inputs(rows=8)) is None
    with open(path, "rb") as handle:
        record = pickle.load(handle)
    with open(path, "wb") as handle:
        pickle.dump({**record, "jax": "0.0.1"}, handle)
    assert kept.load(path, step, inputs) is None


def test_a_missing_or_broken_file_loads_nothing(tmp_path):
    step, inputs = _step(tmp_path), _inputs()
    assert kept.load(str(tmp_path / "none.pickle"), step, inputs) is None
    (tmp_path / "half.pickle").write_bytes(b"\x80\x05half")
    assert kept.load(str(tmp_path / "half.pickle"), step, inputs) is None
