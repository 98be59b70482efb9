"""An example builds its mesh as users write it, `jax.make_mesh((8,), ("data",))`: every request
of an advise for a TPU target runs it in a process that sees as many devices as the target has
chips (issue 47: it failed with "Number of devices 1 must be >= the product of mesh_shape").
Compiling for the target needs libtpu: test_target.py."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.compile_target import parse_target
from tests.agent import AGENT_PYTHON, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX


@pytest.fixture(scope="module", autouse=True)
def _agent_has_make_mesh():
    """JAX 0.4.30 (the oldest end CI runs the agent in) has no `jax.make_mesh`."""
    probe = subprocess.run([AGENT_PYTHON, "-c", "import jax; jax.make_mesh"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"the agent's JAX ({AGENT_PYTHON}) has no jax.make_mesh")


DATA_PARALLEL = """
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P


def layer(h, w):
    return jnp.tanh(h @ w), None


def stack(ws, x):
    h, _ = jax.lax.scan(jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable), x, ws)
    return jnp.mean(h**2)


def example():
    mesh = jax.make_mesh(({devices},), ("data",))
    ws = jax.ShapeDtypeStruct((4, 256, 256), jnp.float32, sharding=NamedSharding(mesh, P()))
    x = jax.ShapeDtypeStruct((512, 256), jnp.float32, sharding=NamedSharding(mesh, P("data")))
    return {{"fn": stack, "args": (ws, x)}}
"""


def _advise(service, tmp_path, devices: int, target: str):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(DATA_PARALLEL.format(devices=devices)), encoding="utf-8")
    return advise(
        service, path, line_of(path), example="model.py:example", root=tmp_path, target=parse_target(target)
    )


def test_the_example_sees_as_many_devices_as_the_target_has_chips(service, tmp_path):
    advice = _advise(service, tmp_path, 8, "v5e-8")
    assert advice.ok, advice.message
    current = advice.current
    assert current is not None and current.residuals


def test_a_mesh_larger_than_the_target_says_what_the_example_sees(service, tmp_path):
    advice = _advise(service, tmp_path, 16, "v5e-8")
    assert advice.status == "example_error"
    assert "Number of devices 8 must be >=" in advice.message
    assert "the example sees 8 devices, as many as the target has chips" in advice.message
    assert "AbstractMesh" in advice.message
