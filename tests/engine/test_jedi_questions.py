"""`jax-lsp check` asks jedi about a callee only where the answer could change a finding: a call
whose policy leads nowhere the analysis follows gives none, whatever checkpoint it is. The
editor, the trace and the advisor (whose sites are hovered, traced and advised on) still ask."""

from __future__ import annotations

from jax_lsp.engine import Workspace
from tests.cli.runner import run_check
from tests.engine.test_jedi_names import broken_policy

# Each callee comes from a star import of a module that binds it by unpacking a tuple: only jedi
# can name it `jax.checkpoint` (tests/engine/test_jedi_names.py, star_import_project).
HELPERS = "import jax\nremat_a, remat_b = jax.checkpoint, jax.checkpoint\n"
MODEL = (
    "from helpers import *\n"
    + broken_policy("bad")
    + "\n\ndef g(x):\n    return x\n\n\n"
    + "def build(policy):\n    return remat_b(g, policy=policy)\n\n\n"  # a parameter: leads nowhere
    + "f = remat_a(g, policy=bad)\n"  # leads to a broken policy: JAX101 once jedi names remat_a
)


def _project(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path / "model.py"


def test_check_asks_jedi_only_about_the_call_that_could_give_a_finding(tmp_path):
    _project(tmp_path)
    result = run_check(tmp_path, "--output-format", "concise", "--verbose", "--no-cache", "model.py")
    assert result.stdout.count("JAX101") == 1
    assert "jax-lsp: jedi: asked about 1 callee(s) in 1 file(s)" in result.stderr


def test_the_findings_are_those_of_a_workspace_that_asks_about_every_callee(tmp_path):
    model = _project(tmp_path)
    every = Workspace([tmp_path])
    only = Workspace([tmp_path], findings_only=True)
    assert only.check_file(model) == every.check_file(model) != []
    assert len(every.sites(every.load(model))) == 2  # the editor's sites: both calls
    assert len(only.sites(only.load(model))) == 1
