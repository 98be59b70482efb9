"""The byte search that decides which files are parsed at all: every way of writing a site or a
checked call passes it, and real code that only says "checkpoint" (orbax, prose) does not.
Each case is also analysed in full, so the test proves the search is right to keep or skip it."""

from __future__ import annotations

import json

import pytest

from jax_lsp.core.text.triggers import could_hold_site, trigger_lines
from jax_lsp.engine import analyze_text

BAD_POLICY = "def bad(prim, *avals, **params):\n    if prim.name == 'sin':\n        return True\n"

# Each holds a finding that no other trigger in it would let through.
KEPT = {
    "policy keyword": "import jax\nf = jax.checkpoint(g, policy=bad)\n",
    "positional policy": "import jax\nf = jax.checkpoint(g, bad)\n",
    "remat": "import jax\nf = jax.remat(g, bad)\n",
    "equinox": "import equinox as eqx\nf = eqx.filter_checkpoint(g, bad)\n",
    "imported under another name": "from jax import checkpoint as ckpt\nf = ckpt(g, bad)\n",
    "assigned, with a comment": "import jax\nckpt = jax.checkpoint  # short\nf = ckpt(g, bad)\n",
    "ready-made policy called": "import jax\np = jax.checkpoint_policies.dots_saveable()\n",
    "checkpoint_dots called": "import jax\np = jax.checkpoint_policies.checkpoint_dots()\n",
    "Offloadable": "from jax.ad_checkpoint import Offloadable\nx = Offloadable(src='device', dst='host')\n",
    "offload factory": (
        "import jax\np = jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'host')\n"
    ),
    "after a keyword, a blank before the call": (
        "from jax import checkpoint\n\n\ndef make(g):\n    return checkpoint (g, bad)\n"
    ),
    "partial without a policy": (
        "import functools, jax\ng = functools.partial(jax.checkpoint, static_argnums=(1,))(lambda x: x)\n"
    ),
}

# Real code from the corpus, in short: nothing here is a site or a call a rule checks.
SKIPPED = {
    "orbax": "import orbax.checkpoint as ocp\nmanager = ocp.CheckpointManager(d)\nmanager.save_checkpoint(1)\n",
    "a function named like one": "def save_checkpoint(state):\n    pass\nsave_checkpoint(bad)\n",
    "prose": "# Restore the model from the last checkpoint\n# before training on.\nx = 1\n",
    "prose calling names": (
        '"""Converts an Orbax checkpoint (e.g. on GCS) to safetensors.\n\nLoading checkpoint(s) takes\n'
        'long: mind the policy = the one of the run."""\n'
    ),
    "a docstring naming a policy": (
        'def f(name="nothing_saveable"):\n    """Defaults to `"nothing_saveable"`."""\n    return name\n'
    ),
    "other keywords": "config.remat_policy = 'full'\nrun(eval_policy=bad, save_policy=bad)\n",
    "cpu offload of another library": (
        "from transformer_engine.pytorch.cpu_offload import get_cpu_offload_context\n"
    ),
}


@pytest.mark.parametrize("code", KEPT.values(), ids=KEPT.keys())
def test_every_way_of_writing_a_finding_is_parsed(code):
    text = BAD_POLICY + code
    assert analyze_text(text, "/w/m.py"), "the case must hold a finding"
    assert could_hold_site(text.encode())


@pytest.mark.parametrize("code", SKIPPED.values(), ids=SKIPPED.keys())
def test_code_that_only_mentions_checkpoints_is_skipped(code):
    text = BAD_POLICY + code
    assert analyze_text(text, "/w/m.py") == [], "the case must hold no finding"
    assert not could_hold_site(text.encode())


def test_only_the_lines_of_sites_checked_calls_and_tags_are_walked():
    text = (
        "import jax\n"  # 1
        "from jax.ad_checkpoint import checkpoint_name\n"  # 2: a tag's import (its alias would be marked)
        "def save(manager, step):\n"  # 3
        "    manager.save_checkpoint(step)  # orbax: no trigger\n"  # 4
        "def block(x):\n"  # 5
        "    return checkpoint_name(x, 'attn')\n"  # 6: a tag
        "f = jax.checkpoint(\n"  # 7: a call of a checkpoint function
        "    block,\n"  # 8
        "    policy=bad)\n"  # 9: a policy keyword
    )
    assert trigger_lines(text) == (2, 6, 7, 9)


def _notebook(source: str, image: str) -> bytes:
    import json

    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": [
            {"data": {"image/png": image, "text/plain": ["<Figure>"]}, "output_type": "display_data"}
        ],
        "source": source.splitlines(keepends=True),
    }
    return json.dumps(
        {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1
    ).encode()


def test_a_notebooks_images_are_not_searched_and_its_code_is():
    from jax_lsp.core.notebooks.files import file_could_hold_site

    base64 = "iVBORw0KGgo" + "A" * 5000 + "/nothing+saveable/" + "B" * 5000  # a trigger word by chance
    assert not file_could_hold_site("plot.ipynb", _notebook("import matplotlib\nplot()\n", base64))
    site = "import jax\nf = jax.checkpoint(g, policy=jax.checkpoint_policies.nothing_saveable)\n"
    assert file_could_hold_site("model.ipynb", _notebook(site, base64))
    # A cell that writes the pattern of an image as text keeps it: its quotes are escaped in JSON.
    text = 'meta = {"image/png": "x"}; p = jax.checkpoint_policies.nothing_saveable\n'
    assert file_could_hold_site("text.ipynb", _notebook(text, ""))


@pytest.mark.parametrize("as_one_string", [False, True], ids=["source as lines", "source as one string"])
def test_a_notebooks_escaped_line_breaks_and_tabs_end_identifiers_and_lines(as_one_string: bool):
    """A notebook's JSON is searched without decoding it: `\\n` and `\\t` there are escapes."""
    from jax_lsp.core.notebooks.files import file_could_hold_site

    def notebook(source: str) -> bytes:
        data = json.loads(_notebook(source, ""))
        if as_one_string:
            data["cells"][0]["source"] = source
        return json.dumps(data, indent=1).encode()

    for site in (
        "import jax\nckpt = jax.checkpoint\ny = ckpt(f, False, False, (), p)\n",  # an alias at a line's end
        "import jax\nckpt = jax.checkpoint",  # ... at the cell's end
        "y = remat_scan(f,\n\tpolicy=p)\n",  # a keyword after a tab
    ):
        assert file_could_hold_site("model.ipynb", notebook(site), policy_sites_only=True), site
    for no_site in ("ckpt = jax.checkpoint_dir\n", "x = 1\nnpolicy = 2\n", "save_checkpoint(state)\n"):
        assert not file_could_hold_site("model.ipynb", notebook(no_site), policy_sites_only=True), no_site
