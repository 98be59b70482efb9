"""Checkpoints without a policy are found by what they call, and the edit that passes a policy
takes the form each checkpoint function accepts."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.core import apply_edits
from jax_lsp.core.policies.default_sites import find_default_sites, policy_edits
from jax_lsp.core.policies.partial import jax_import_edits
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
        f"import jax\nimport flax.linen as nn\nB = nn.remat(Block, policy={P})\n",
    ),
    "flax call, jax.numpy alone imported, under a docstring": (  # recurrentgemma's griffin.py
        '"""Griffin."""\nfrom flax import linen as nn\nimport jax.numpy as jnp\nclass G:\n    def setup(self):\n        b = nn.remat(B, static_argnums=4)\n',
        f'"""Griffin."""\nimport jax\nfrom flax import linen as nn\nimport jax.numpy as jnp\nclass G:\n    def setup(self):\n        b = nn.remat(B, static_argnums=4, policy={P})\n',
    ),
    "jax.numpy imported bare binds jax": (
        "import jax.numpy\nfrom jax import checkpoint\nf = checkpoint(g)\n",
        f"import jax.numpy\nfrom jax import checkpoint\nf = checkpoint(g, policy={P})\n",
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
        f"import jax\nimport functools\nimport flax.linen as nn\n\n@functools.partial(nn.checkpoint, policy={P})\nclass B(nn.Module):\n    pass\n",
    ),
    "nnx decorator": (
        "import jax\nfrom flax import nnx\n@nnx.remat\ndef h(x):\n    return x\n",
        f"import jax\nfrom flax import nnx\n@nnx.remat(policy={P})\ndef h(x):\n    return x\n",
    ),
    "nnx decorator called": (
        "import jax\nfrom flax import nnx\n@nnx.remat()\ndef h(x):\n    return x\n",
        f"import jax\nfrom flax import nnx\n@nnx.remat(policy={P})\ndef h(x):\n    return x\n",
    ),
    "equinox decorator in a method, jax imported inside": (
        "import equinox as eqx\nclass M:\n    import jax\n    @eqx.filter_checkpoint\n    def f(self, x):\n        return x\n",
        f"import equinox as eqx\nclass M:\n    import jax\n    @eqx.filter_checkpoint(policy={P})\n    def f(self, x):\n        return x\n",
    ),
}


@pytest.mark.parametrize("form", sorted(FIXED))
def test_the_edit_passes_the_policy_in_the_form_the_function_takes(form, tmp_path):
    before, after = FIXED[form]
    text, [site] = _sites(before, tmp_path)
    assert apply_edits(text, policy_edits(site, P)) == after


def test_the_edited_module_runs_under_jax_where_it_imported_only_parts_of_it(tmp_path):
    """Passing `jax.checkpoint_policies...` where the module binds no `jax` imports it: the edited
    module runs and differentiates (without the import, a NameError at its first line run)."""
    jax = pytest.importorskip("jax")
    code = "from jax import checkpoint\nimport jax.numpy as jnp\nf = checkpoint(jnp.sin)\n"
    text, [site] = _sites(code, tmp_path)
    edited: dict = {}
    exec(compile(apply_edits(text, policy_edits(site, P)), "m.py", "exec"), edited)
    assert float(jax.grad(edited["f"])(0.0)) == 1.0
    with pytest.raises(NameError, match="'jax' is not defined"):
        exec(
            compile(text.replace("checkpoint(jnp.sin)", f"checkpoint(jnp.sin, policy={P})"), "m.py", "exec"),
            {},
        )


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


@pytest.mark.parametrize(
    ("code", "imports"),
    [
        ("import jax\n", False),
        ("import jax.numpy\n", False),  # binds `jax` too
        ("import jax.numpy as jnp\n", True),
        ("from jax import checkpoint_policies as cp\n", True),
        ("import jax as j\n", True),
        ('"""Doc."""\nfrom __future__ import annotations\n', True),
    ],
)
def test_a_policy_written_into_a_module_imports_jax_where_it_is_not_bound(code, imports, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(code, encoding="utf-8")
    module = Workspace(roots=[tmp_path]).load(path)
    edits = jax_import_edits(module, P)
    assert [e.new_text.strip() for e in edits] == (["import jax"] if imports else [])
    assert not jax_import_edits(module, "cp.dots_saveable")  # reads no `jax.`
    compile(apply_edits(code, edits) + f"p = {P}\n", "m.py", "exec")  # still Python
