"""Every form of policy site and every resolution form reaches the policy body; unknowns stay silent."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.engine import Workspace, analyze_text
from jax_lsp.engine.batch import check_paths

BROKEN = """
def bad(prim, *avals, **params):
    if prim.name == "sin":
        return True
"""


def codes(code: str, tmp_path) -> list[tuple[str, int]]:
    text = textwrap.dedent(code)
    return [(f.code, f.span.start.line + 1) for f in analyze_text(text, str(tmp_path / "m.py"))]


SITES = {
    "jax.checkpoint": "import jax\nf = jax.checkpoint(g, policy=bad)",
    "jax.remat": "import jax\nf = jax.remat(g, policy=bad)",
    "from-import alias": "from jax import checkpoint as ckpt\nf = ckpt(g, policy=bad)",
    "assigned alias": "import jax\nremat = jax.checkpoint\nf = remat(g, policy=bad)",
    "ad_checkpoint": "import jax.ad_checkpoint\nf = jax.ad_checkpoint.checkpoint(g, policy=bad)",
    "functools.partial": "import functools, jax\nf = functools.partial(jax.checkpoint, policy=bad)(g)",
    "partial imported": "from functools import partial\nimport jax\n@partial(jax.remat, policy=bad)\ndef h(x):\n    return x",
    "flax nn.remat": "import flax.linen as nn\nB = nn.remat(object, policy=bad)",
    "flax linen.checkpoint": "import flax.linen\nB = flax.linen.checkpoint(object, policy=bad)",
    "flax partitioning": "from flax.linen import partitioning\nB = partitioning.remat(object, policy=bad)",
    "flax core lift": "from flax.core import lift\nB = lift.checkpoint(g, policy=bad)",
    "nnx.remat decorator": "from flax import nnx\n@nnx.remat(policy=bad)\ndef h(x):\n    return x",
    "equinox": "import equinox as eqx\n@eqx.filter_checkpoint(policy=bad)\ndef h(x):\n    return x",
    "save_from_both": "import jax\ncp = jax.checkpoint_policies\nf = jax.checkpoint(g, policy=cp.save_from_both_policies(cp.dots_saveable, bad))",
}


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
def test_every_site_form_reaches_the_policy(site, tmp_path):
    assert ("JAX101", 2) in codes(BROKEN + "\n" + site, tmp_path)


RESOLUTIONS = {
    "lambda": "import jax\nf = jax.checkpoint(g, policy=lambda p, *a, **k: None)",
    "name assigned once": "import jax\np = bad\nf = jax.checkpoint(g, policy=p)",
    "partial of def": "import functools, jax\nf = jax.checkpoint(g, policy=functools.partial(bad))",
    "factory": "import jax\ndef make():\n    def inner(prim, *a, **k):\n        return None\n    return inner\nf = jax.checkpoint(g, policy=make())",
    "factory returning lambda": "import jax\ndef make(n):\n    return lambda prim, *a, **k: None\nf = jax.checkpoint(g, policy=make(3))",
    "conditional": "import jax\nf = jax.checkpoint(g, policy=bad if FLAG else None)",
    "function scope": "import jax\ndef build():\n    p = bad\n    return jax.checkpoint(g, policy=p)",
    "dict literal entry": "import jax\nPOLICIES = {'a': bad}\nf = jax.checkpoint(g, policy=POLICIES['a'])",
    "dict(...) entry": "import jax\nPOLICIES = dict(a=bad)\nf = jax.checkpoint(g, policy=POLICIES['a'])",
    "every entry of an unknown key": "import jax\nPOLICIES = {'a': bad}\nf = jax.checkpoint(g, policy=POLICIES[NAME])",
    "dict.get": "import jax\nPOLICIES = dict(a=bad)\nf = jax.checkpoint(g, policy=POLICIES.get(NAME))",
    "dict.get default": "import jax\nP = {}\nf = jax.checkpoint(g, policy=P.get(NAME, bad))",
    "parameter reassigned in a branch": (
        "import jax\ndef wrap(g, policy=None):\n    if isinstance(policy, str):\n        policy = bad\n"
        "    return jax.checkpoint(g, policy=policy)"
    ),
    "assigned in a branch beside the use": "import jax\np = None\nif FLAG:\n    p = bad\nf = jax.checkpoint(g, policy=p)",
    "class attribute": "import jax\nclass P:\n    chosen = bad\nf = jax.checkpoint(g, policy=P.chosen)",
}


@pytest.mark.parametrize("site", RESOLUTIONS.values(), ids=RESOLUTIONS.keys())
def test_every_resolution_form_is_followed(site, tmp_path):
    assert any(code == "JAX101" for code, _ in codes(BROKEN + "\n" + site, tmp_path))


UNKNOWN = {
    "parameter": "import jax\ndef build(p):\n    return jax.checkpoint(g, policy=p)",
    "dict lookup of a missing key": "import jax\nPOLICIES = {'a': bad}\nf = jax.checkpoint(g, policy=POLICIES['b'])",
    "getattr": "import jax\nf = jax.checkpoint(g, policy=getattr(jax.checkpoint_policies, NAME))",
    "assigned twice": "import jax\np = bad\np = None\nf = jax.checkpoint(g, policy=p)",
    "assigned again in the use's block": "import jax\np = bad\nif FLAG:\n    p = None\n    f = jax.checkpoint(g, policy=p)",
    "assigned after the use": "import jax\ndef h(p=None):\n    f = jax.checkpoint(g, policy=p)\n    p = bad",
    "also a loop target": "import jax\np = bad\nfor p in ITEMS:\n    pass\nf = jax.checkpoint(g, policy=p)",
    "not used as a policy": "x = bad",
    "local checkpoint function": "def checkpoint(f, policy=None):\n    return f\nf = checkpoint(g, policy=bad)",
    "other library": "import torch.utils.checkpoint as c\nf = c.checkpoint(g, policy=bad)",
}


@pytest.mark.parametrize("site", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_unknown_values_and_other_checkpoints_are_never_reported(site, tmp_path):
    assert codes(BROKEN + "\n" + site, tmp_path) == []


def test_policy_in_another_module_is_reported_in_its_own_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "policies.py").write_text(BROKEN)
    (tmp_path / "pkg" / "model.py").write_text(
        "import jax\nfrom .policies import bad\nf = jax.checkpoint(g, policy=bad)\n"
    )
    (tmp_path / "train.py").write_text(
        "import jax\nimport pkg.policies as P\nh = jax.remat(g, policy=P.bad)\n"
    )
    results = check_paths(Workspace([tmp_path]), [tmp_path])
    assert [(f.code, f.span.start.line) for f in results[str(tmp_path / "pkg" / "policies.py")]] == [
        ("JAX101", 1)
    ]
    assert set(results) == {str(tmp_path / "pkg" / "policies.py")}


def test_workspace_index_finds_sites_for_a_definition_module(tmp_path):
    (tmp_path / "policies.py").write_text(BROKEN)
    (tmp_path / "model.py").write_text(
        "import jax\nfrom policies import bad\nf = jax.checkpoint(g, policy=bad)\n"
    )
    workspace = Workspace([tmp_path])
    assert workspace.check_file(tmp_path / "policies.py") == []  # nothing known before indexing
    workspace.index()
    assert [f.code for f in workspace.check_file(tmp_path / "policies.py")] == ["JAX101"]
    # Editing the site away (an open buffer wins over disk) clears the definition's finding.
    workspace.set_document(tmp_path / "model.py", "import jax\nf = jax.checkpoint(g)\n")
    assert workspace.affected_files(tmp_path / "model.py") == {tmp_path / "policies.py"}
    assert workspace.check_file(tmp_path / "policies.py") == []


def test_jedi_resolves_a_checkpoint_behind_a_star_import(tmp_path):
    # The file's own imports cannot say what `remat` is (a star import); jedi can, by reading
    # jax's own source, so jax must be installed.
    pytest.importorskip("jax")
    (tmp_path / "helpers.py").write_text("import jax\nremat = jax.checkpoint\n")
    code = BROKEN + "\nfrom helpers import *\nf = remat(g, policy=bad)\n"
    (tmp_path / "m.py").write_text(code)
    assert [f.code for f in Workspace([tmp_path]).check_file(tmp_path / "m.py")] == ["JAX101"]


def test_jax109_sites_still_check_their_policy(tmp_path):
    site = "import jax\n@jax.checkpoint(policy=bad)\ndef h(x):\n    return x"
    assert ("JAX101", 2) in codes(BROKEN + "\n" + site, tmp_path)


def test_repeated_imports_of_one_package_keep_its_names_known(tmp_path):
    site = "import jax\nimport jax.numpy as jnp\nimport jax.ad_checkpoint\nf = jax.checkpoint(g, policy=bad)"
    assert ("JAX101", 2) in codes(BROKEN + "\n" + site, tmp_path)
