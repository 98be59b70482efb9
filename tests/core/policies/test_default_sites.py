"""Checkpoints without a policy are found by what they call, and the edit that passes a policy
takes the form each checkpoint function accepts."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.core import apply_edits
from jax_lsp.core.policies.default_sites import find_default_sites, policy_edits
from jax_lsp.engine import Workspace

P = "jax.checkpoint_policies.dots_saveable"


def _sites(code: str, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    module = Workspace(roots=[tmp_path]).load(path)
    assert module is not None
    return module.source.text, find_default_sites(module)


FIXED = {
    "call": ("import jax\nf = jax.checkpoint(g)\n", f"import jax\nf = jax.checkpoint(g, policy={P})\n"),
    "keyword and trailing comma": (
        "import jax\nf = jax.remat(\n    g,\n    prevent_cse=False,\n)\n",
        f"import jax\nf = jax.remat(\n    g,\n    prevent_cse=False, policy={P},\n)\n",
    ),
    "assigned alias": (
        "import jax\nckpt = jax.checkpoint\nf = ckpt(g)\n",
        f"import jax\nckpt = jax.checkpoint\nf = ckpt(g, policy={P})\n",
    ),
    "flax call": (
        "import flax.linen as nn\nB = nn.remat(Block)\n",
        f"import flax.linen as nn\nB = nn.remat(Block, policy={P})\n",
    ),
    "partial decorator": (
        "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef h(x, n):\n    return x\n",
        f"import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,), policy={P})\ndef h(x, n):\n    return x\n",
    ),
    "decorator, partial imported": (
        "from functools import partial as p\nimport jax\n@jax.remat\ndef h(x):\n    return x\n",
        f"from functools import partial as p\nimport jax\n@p(jax.remat, policy={P})\ndef h(x):\n    return x\n",
    ),
    "decorator, nothing imported": (
        '"""Doc."""\nimport jax\n\n\n@jax.checkpoint\ndef h(x):\n    return x\n',
        f'"""Doc."""\nimport functools\nimport jax\n\n\n@functools.partial(jax.checkpoint, policy={P})\ndef h(x):\n    return x\n',
    ),
    "decorator in a function under an if": (
        "from functools import partial\nimport jax\nif jax:\n    def make():\n        @jax.remat\n        def h(x):\n            return x\n",
        f"from functools import partial\nimport jax\nif jax:\n    def make():\n        @partial(jax.remat, policy={P})\n        def h(x):\n            return x\n",
    ),
    "flax decorator on a class": (
        "import functools\nimport flax.linen as nn\n\n@nn.checkpoint\nclass B(nn.Module):\n    pass\n",
        f"import functools\nimport flax.linen as nn\n\n@functools.partial(nn.checkpoint, policy={P})\nclass B(nn.Module):\n    pass\n",
    ),
    "nnx decorator": (
        "from flax import nnx\n@nnx.remat\ndef h(x):\n    return x\n",
        f"from flax import nnx\n@nnx.remat(policy={P})\ndef h(x):\n    return x\n",
    ),
    "nnx decorator called": (
        "from flax import nnx\n@nnx.remat()\ndef h(x):\n    return x\n",
        f"from flax import nnx\n@nnx.remat(policy={P})\ndef h(x):\n    return x\n",
    ),
    "equinox decorator in a method": (
        "import equinox as eqx\nclass M:\n    @eqx.filter_checkpoint\n    def f(self, x):\n        return x\n",
        f"import equinox as eqx\nclass M:\n    @eqx.filter_checkpoint(policy={P})\n    def f(self, x):\n        return x\n",
    ),
}


@pytest.mark.parametrize("form", sorted(FIXED))
def test_the_edit_passes_the_policy_in_the_form_the_function_takes(form, tmp_path):
    before, after = FIXED[form]
    text, [site] = _sites(before, tmp_path)
    assert apply_edits(text, policy_edits(site, P)) == after


@pytest.mark.parametrize(
    "code",
    [
        "import jax\nf = jax.checkpoint(g, policy=p)\n",  # a policy site
        "import jax\nf = jax.checkpoint(g, **options)\n",  # may hold one
        "import flax.linen as nn\nB = nn.remat(Block, True, True, False, True, (), p)\n",  # positional
        "import jax\n@jax.checkpoint()\ndef h(x):\n    return x\n",  # raises: no function (JAX109)
        "def checkpoint(f):\n    return f\n@checkpoint\ndef h(x):\n    return x\nk = checkpoint(h)\n",
        "import functools\nf = functools.partial(print, sep='')\n",
    ],
)
def test_what_is_not_a_checkpoint_without_a_policy(code, tmp_path):
    assert _sites(code, tmp_path)[1] == []
