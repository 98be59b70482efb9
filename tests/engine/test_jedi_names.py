"""jedi, the slow path: one Script per file text, answers reused across edits, a time budget per file.

Real jedi throughout: `jedi.Script` is wrapped only to count what the analysis asks of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jax_lsp.core import Settings
from jax_lsp.engine import Workspace

jedi = pytest.importorskip("jedi")
pytest.importorskip("jax")  # jedi names `jax.checkpoint` by reading jax's own source

ROOMY = Settings(jedi_budget=60)  # no test but the budget's own may depend on the machine's speed


def broken_policy(name: str) -> str:
    return f"\ndef {name}(prim, *avals, **params):\n    if prim.name == 'sin':\n        return True\n"


def star_import_project(tmp_path: Path, sites: int) -> tuple[Path, str]:
    """A module whose `policy=` callees only jedi can name: each comes from a star import of a
    module that binds it by unpacking a tuple, which the analysis does not follow (a plain
    `remat_0 = jax.checkpoint` there it follows, star import and all)."""
    helpers = "import jax\n" + "".join(f"remat_{n}, _ = jax.checkpoint, None\n" for n in range(sites))
    (tmp_path / "helpers.py").write_text(helpers)
    text = "from helpers import *\n" + "".join(broken_policy(f"bad_{n}") for n in range(sites)) + "\n"
    text += "".join(f"f_{n} = remat_{n}(g, policy=bad_{n})\n" for n in range(sites))
    path = tmp_path / "model.py"
    path.write_text(text)
    return path, text


@pytest.fixture
def scripts(monkeypatch) -> dict[str, int]:
    """Counts of real jedi.Script constructions and inferences made through it."""
    counts = {"built": 0, "inferred": 0}

    class CountingScript(jedi.Script):
        def __init__(self, *args, **kwargs):
            counts["built"] += 1
            super().__init__(*args, **kwargs)

        def infer(self, *args, **kwargs):
            counts["inferred"] += 1
            return super().infer(*args, **kwargs)

    monkeypatch.setattr(jedi, "Script", CountingScript)
    return counts


def test_one_script_per_file_text_names_every_callee(tmp_path, scripts):
    path, _ = star_import_project(tmp_path, 3)
    findings = Workspace([tmp_path], ROOMY).check_file(path)
    assert [(f.code, f.span.start.line) for f in findings] == [("JAX101", 2), ("JAX101", 6), ("JAX101", 10)]
    assert scripts == {"built": 1, "inferred": 3}


def test_an_edit_elsewhere_reuses_the_answers_and_a_new_import_asks_again(tmp_path, scripts):
    path, text = star_import_project(tmp_path, 3)
    workspace = Workspace([tmp_path], ROOMY)
    assert len(workspace.check_file(path)) == 3
    workspace.set_document(path, text + "\nx = 1\n")  # another statement: the callees mean the same
    assert len(workspace.check_file(path)) == 3
    assert scripts == {"built": 1, "inferred": 3}
    workspace.set_document(path, "import os\n" + text)  # the imports changed: jedi is asked again
    assert len(workspace.check_file(path)) == 3
    assert scripts == {"built": 2, "inferred": 6}


def test_jedi_is_not_asked_about_builtins_or_functions_defined_here(tmp_path, scripts):
    text = broken_policy("bad") + "def outer():\n    def local(f, policy):\n        return f\n"
    text += "    return local(g, policy=bad)\n\nparams = dict(policy=bad)\n"
    (tmp_path / "model.py").write_text(text)
    assert Workspace([tmp_path], ROOMY).check_file(tmp_path / "model.py") == []
    assert scripts == {"built": 0, "inferred": 0}


def test_jedi_is_not_asked_about_the_methods_of_an_object_a_class_made(tmp_path, scripts):
    # As in jax/_src/ad_checkpoint.py: `remat_p.bind(..., policy=policy)`.
    text = "from jax._src import core\nremat_p = core.Primitive('remat2')\n"
    text += "def remat(*args, policy):\n    return remat_p.bind(*args, policy=policy)\n"
    (tmp_path / "model.py").write_text(text)
    assert Workspace([tmp_path], ROOMY).check_file(tmp_path / "model.py") == []
    assert scripts == {"built": 0, "inferred": 0}


def test_jedi_is_not_asked_about_the_methods_of_a_typed_parameter_or_a_with_target(tmp_path, scripts):
    # As in NVIDIA/JAX-Toolbox's triage tool, where jedi took a second: `policy=` is a keyword
    # of its container's methods, called on a parameter typed `Container` and on what a `with`
    # statement gives (in a function nested under it).
    (tmp_path / "container.py").write_text(
        "import jax\n\nclass Container:\n    def exec(self, command, policy='once'):\n        return command\n\n"
        "    def check_exec(self, command, policy='once'):\n        return command\n"
    )
    text = (
        "from container import Container\n\n"
        "def commits_known(worker: Container):\n    return worker.exec(['git'], policy='once')\n\n"
        "def triage(make):\n    with make('url') as worker:\n        def _build():\n"
        "            return worker.check_exec(['sh'], policy='once_per_container')\n"
        "        return _build()\n"
    )
    (tmp_path / "triage.py").write_text(text)
    assert Workspace([tmp_path], ROOMY).check_file(tmp_path / "triage.py") == []
    assert scripts == {"built": 0, "inferred": 0}


def test_a_chain_of_star_imports_in_the_workspace_names_the_callee_without_jedi(tmp_path, scripts):
    # As in Ueaj-Kerman/macrogpt-jax, where jedi took a second to name `nnx.remat`: the model
    # star-imports its layers, which star-import the module that imports `nnx`; `__all__`, where
    # a module has one, says what its star import gives.
    package = tmp_path / "ueaj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mlp.py").write_text("import jax\nfrom flax import nnx\n\n__all__ = ['nnx', 'jax']\n")
    (package / "layer.py").write_text("from ueaj.mlp import *\n\nWIDTH = 4\n")
    (package / "hidden.py").write_text("from flax import nnx as ckpt\n\n__all__ = ['WIDTH']\nWIDTH = 4\n")
    model = (
        "from ueaj.layer import *\nfrom ueaj.hidden import *\n\n"
        "class Model(nnx.Module):\n    def __call__(self, x):\n"
        "        @nnx.remat(policy=jax.checkpoint_policies.nothing_saveable)\n"
        "        def block(y):\n            return y\n\n"
        "        @ckpt.remat(policy=jax.checkpoint_policies.nothing_saveable)\n"  # not exported
        "        def other(y):\n            return y\n\n"
        "        return block(other(x))\n"
    )
    (package / "model.py").write_text(model)
    workspace = Workspace([tmp_path], ROOMY)
    module = workspace.load(package / "model.py")
    sites = workspace.sites(module)
    assert [(site.call.lineno, site.function.qualname) for site, _ in sites] == [(6, "flax.nnx.remat")]
    assert scripts == {"built": 0, "inferred": 0}


def test_past_the_budget_the_remaining_callees_stay_unknown(tmp_path, scripts):
    path, _ = star_import_project(tmp_path, 20)
    workspace = Workspace([tmp_path], Settings(jedi_budget=1e-6))
    findings = workspace.check_file(path)
    # The first inference starts within the budget and spends it; no other one starts.
    assert scripts["inferred"] == 1
    assert len(findings) <= 1
    stats = workspace.jedi.stats[str(path)]
    assert (stats.asked, stats.skipped) == (1, 19)


def test_a_budget_of_zero_turns_jedi_off(tmp_path, scripts):
    path, _ = star_import_project(tmp_path, 2)
    assert Workspace([tmp_path], Settings(jedi_budget=0)).check_file(path) == []
    assert scripts == {"built": 0, "inferred": 0}


def test_in_the_background_jedi_waits_for_refine(tmp_path, scripts):
    path, text = star_import_project(tmp_path, 2)
    workspace = Workspace([tmp_path], ROOMY, jedi_in_background=True)
    workspace.set_document(path, text)
    assert workspace.check_file(path) == []  # the static pass alone: the star import hides the callees
    assert scripts["built"] == 0 and workspace.jedi.waiting(path, text)
    assert not workspace.refine_with_jedi(path, text + "\n")  # a text nobody checked: nothing to ask
    assert workspace.refine_with_jedi(path, text)
    assert len(workspace.check_file(path)) == 2
    assert scripts == {"built": 1, "inferred": 2}
    assert not workspace.jedi.waiting(path, text)


def test_the_budget_is_a_number_of_seconds(tmp_path):
    from jax_lsp.core.config import SettingsError, settings_from_mapping
    from jax_lsp.server.settings import resolve

    assert settings_from_mapping({"jedi-budget": 2}).jedi_budget == 2.0
    for bad in (-1, "1", True):
        with pytest.raises(SettingsError, match="jedi-budget"):
            settings_from_mapping({"jedi-budget": bad})
    (tmp_path / "pyproject.toml").write_text("[tool.jax-lsp]\njedi-budget = 3\n")
    assert resolve({}, [tmp_path])[0].core.jedi_budget == 3.0
    assert resolve({"jediBudget": 0}, [tmp_path])[0].core.jedi_budget == 0.0  # the editor's wins
    settings, problems = resolve({"jediBudget": "soon"}, [tmp_path])
    assert settings.core.jedi_budget == 3.0 and "jediBudget" in problems[0]


def test_what_is_kept_of_a_file_is_bounded_however_often_it_changed(tmp_path, monkeypatch):
    from jax_lsp.engine import jedi_names

    monkeypatch.setattr(jedi_names, "ANSWERS_KEPT", 2)
    path, text = star_import_project(tmp_path, 1)
    workspace = Workspace([tmp_path], ROOMY, jedi_in_background=True)
    jedi = workspace.jedi
    for edit in range(6):  # each edit changes the statement around the callee: a new answer
        edited = text.replace("policy=bad_0)", f"policy=bad_0)  # edit {edit}")
        workspace.set_document(path, edited)
        workspace.check_file(path)
        assert workspace.refine_with_jedi(path, edited)
        assert len(workspace.check_file(path)) == 1
    key = str(path)
    kept = [jedi._answers[key], jedi._read_for[key], jedi._latest[key], jedi._fresh.get(key, {})]
    assert [len(answers) <= 2 for answers in kept] == [True] * 4, [len(answers) for answers in kept]
