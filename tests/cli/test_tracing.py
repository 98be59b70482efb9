"""`jax-lsp check --trace` on a policy defined in a notebook: only the cells' imports and
definitions run, in a module made of the code cells, and JAX's verdict lands in the cell."""

from __future__ import annotations

import json

import pytest

from tests.agent import agent_options
from tests.cli.runner import run_check
from tests.cli.test_notebooks import _write

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

POLICY = "import jax\nimport jax.numpy as jnp\n\n\ndef policy(prim, *args, **params):\n    if prim.name == 'sin':\n        return True"
SIDE_EFFECTS = (
    "open('ran.txt', 'w').write('a cell ran')\n!touch shell_ran.txt\n%time open('magic_ran.txt', 'w')"
)
SITE = "f = jax.checkpoint(lambda x: jnp.cos(jnp.sin(x)), policy=policy)\nf(1.0)"


def test_check_trace_confirms_a_notebook_policy_without_running_its_cells(tmp_path):
    _write(tmp_path / "train.ipynb", ("markdown", "# Train"), POLICY, SIDE_EFFECTS, SITE)
    done = run_check(tmp_path, "--trace", *agent_options(), "--no-cache", "--output-format", "json")
    assert done.returncode == 1, done.stderr
    [finding] = json.loads(done.stdout)
    assert (finding["code"], finding["cell"], finding["line"], finding["column"]) == ("JAX101", 2, 5, 5)
    assert "[Confirmed by trace (jax " in finding["message"], finding["message"]
    assert not [p.name for p in tmp_path.glob("*ran.txt")]
