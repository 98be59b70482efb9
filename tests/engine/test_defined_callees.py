"""A whole-tree check does not parse a file whose only trigger words are `policy=` keywords
passed to a function the project defines (easydel's `auto_remat`), and still finds every site:
where the callee is a checkpoint function after all, or becomes one."""

from __future__ import annotations

from pathlib import Path

from jax_lsp.engine import Workspace
from jax_lsp.engine.batch import check_paths
from jax_lsp.engine.defined_callees import files_showing_no_site

# As easydel writes them (easydel/infra/utils.py, easydel/modules/llama/modeling_llama.py).
UTILS = '''import typing as tp

from flax import nnx as nn


@tp.overload
def auto_remat(module, /, *, policy="none", prevent_cse=True): ...


def auto_remat(*modules, policy="none", prevent_cse=True):
    """Wrap each module's `__call__` in `nn.remat`: `auto_remat(Block, policy="dots_saveable")`."""
    outs = tuple(nn.remat(m.__call__, prevent_cse=prevent_cse) for m in modules)
    return outs[0] if len(outs) == 1 else outs
'''
MODEL = '''"""Llama, its layers made with auto_remat."""
from easydel.infra.utils import ACT2FN, auto_remat, block_wise_ffn


class LlamaModel:
    def __init__(self, config):
        remat_layer_block = auto_remat(
            LlamaDecoderLayer,
            policy=POLICY,  # a string: "dots_saveable" (
        )
        self.layers = [remat_layer_block(config) for _ in range(config.num_hidden_layers)]
'''
# Where `auto_remat` is jax.checkpoint: the model's call is a site, whose policy breaks JAX101.
ALIASED = "import jax\n\nauto_remat = jax.checkpoint\n"
BROKEN_POLICY = '\n\ndef POLICY(prim, *args, **params):\n    if prim.name == "sin":\n        return True\n'


def _project(tmp_path: Path, utils: str = UTILS) -> Path:
    root = tmp_path / "proj"
    (root / "easydel" / "infra").mkdir(parents=True)
    (root / "easydel" / "modules").mkdir()
    for folder in (root / "easydel", root / "easydel" / "infra", root / "easydel" / "modules"):
        (folder / "__init__.py").write_text("")
    (root / "easydel" / "infra" / "utils.py").write_text(utils)
    (root / "easydel" / "modules" / "modeling_llama.py").write_text(MODEL + BROKEN_POLICY)
    return root


def _check(root: Path, cache: Path | None = None) -> dict[str, list[str]]:
    found = check_paths(Workspace([root]), [root], cache, 1)
    return {Path(path).name: [f.code for f in findings] for path, findings in found.items()}


def test_a_file_calling_a_defined_function_with_a_policy_keyword_is_not_parsed(tmp_path, parses):
    root = _project(tmp_path)
    assert _check(root) == {}
    assert "modeling_llama.py" not in parses
    assert "utils.py" in parses  # its own `nn.remat` call holds a trigger
    model = str(root / "easydel" / "modules" / "modeling_llama.py")
    assert files_showing_no_site(Workspace([root]), model) == [str(root / "easydel" / "infra" / "utils.py")]


def test_a_callee_bound_to_a_checkpoint_function_is_followed(tmp_path, parses):
    root = _project(tmp_path, ALIASED)
    assert _check(root) == {"modeling_llama.py": ["JAX101"]}
    assert "modeling_llama.py" in parses


def test_the_cache_checks_the_file_again_when_its_callee_becomes_a_checkpoint_function(tmp_path):
    root, cache = _project(tmp_path), tmp_path / "cache"
    assert _check(root, cache) == {}
    (root / "easydel" / "infra" / "utils.py").write_text(ALIASED)
    assert _check(root, cache) == {"modeling_llama.py": ["JAX101"]}


def test_a_callee_outside_the_workspace_is_named_by_its_import(tmp_path, parses):
    """`from praxis.layers import make_layer`: no workspace module to follow, so the analysis
    names the callee `praxis.layers.make_layer`, no checkpoint function."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "model.py").write_text(
        "from praxis.layers import make_layer\n\nlayer = make_layer(block, policy=settings.remat)\n"
    )
    assert _check(root) == {}
    assert parses == []
    assert files_showing_no_site(Workspace([root]), str(root / "model.py")) == []
