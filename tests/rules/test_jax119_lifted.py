"""JAX119 through Flax's lifted `nn.scan`, `nn.vmap` and `nn.jit` of a remat'd `Module`, bound to
an attribute in `setup`, in `__init__` or to a local, and on the road of a pi0-style model
(openpi's `gemma.py`). Flax's own facts are run first (jax_api.LIFTED_TRANSFORMS: the module is
argument 0, keywords dropped, sliced axes); then each reported case runs under real Flax and
raises `TracerBoolConversionError`, and each quiet one runs, or fails where no `static_argnums`
mends it."""

from __future__ import annotations

import sys
import textwrap
import warnings

import pytest

from tests.rules.site_rules import anchored_text, findings, fixed

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

BLOCK = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    rate: float = 0.5

    @nn.compact
    def __call__(self, x, scale, deterministic=True):
        y = nn.Dense(3)(x) * scale
        return nn.Dropout(self.rate)(y, deterministic), None

"""

# The lifted transform of the remat'd `Block`, by name; `{axes}` and `{jit_static}` are filled in
# (`_fill`), as are the holders' `{static}`, `{lifted}` and `{arguments}`.
LIFTED = {
    "scan": 'nn.scan(block, variable_axes={"params": 0}, split_rngs={"params": True, "dropout": True}, '
    "in_axes={axes}, length=2)()",
    "vmap": 'nn.vmap(block, variable_axes={"params": 0}, split_rngs={"params": True, "dropout": True}, '
    "in_axes={axes})()",
    "jit": "nn.jit(block, static_argnums={jit_static})()",
}
# Each argument after the module (scan: after the carry, `x`) handed on as it is.
AS_IS = {"scan": "(nn.broadcast, nn.broadcast)", "vmap": "(0, None, None)", "jit": ""}

RUN = """

def run():
    x = jnp.ones((2, 3))
    model = Model()
    variables = model.init({"params": jax.random.key(0), "dropout": jax.random.key(1)}, x, False)
    return model.apply(variables, x, False, rngs={"dropout": jax.random.key(2)})
"""

HOLDERS = {
    "setup": """
class Model(nn.Module):
    def setup(self):
        block = nn.remat(Block, static_argnums={static})
        self.layers = {lifted}

    def __call__(self, x, deterministic):
        return self.layers({arguments})[0]
"""
    + RUN,
    "local": """
class Model(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic):
        block = nn.remat(Block, static_argnums={static})
        layers = {lifted}
        return layers({arguments})[0]
"""
    + RUN,
    "init": """
class Runner:
    def __init__(self):
        block = nn.remat(Block, static_argnums={static})
        self.layers = {lifted}

    def __call__(self, x, deterministic):
        rngs = {"params": jax.random.key(0), "dropout": jax.random.key(1)}
        variables = self.layers.init(rngs, {arguments})
        return self.layers.apply(variables, {arguments}, rngs={"dropout": jax.random.key(2)})[0]


def run():
    return Runner()(jnp.ones((2, 3)), False)
""",
}

POSITIONAL = "x, 2.0, deterministic"
KEYWORD = "x, 2.0, deterministic=deterministic"


def _code(
    lifted: str, holder: str = "setup", static: str = "(2,)", arguments: str = POSITIONAL, **filled: str
) -> str:
    """The module: `Block` remat'd with `static`, lifted, bound by `holder`, called with `arguments`."""
    filled = {"axes": AS_IS[lifted], "jit_static": "(3,)", **filled}
    lifted_text = _fill(LIFTED[lifted], filled)
    return BLOCK + _fill(HOLDERS[holder], {"static": static, "lifted": lifted_text, "arguments": arguments})


def _fill(template: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def _run(code: str) -> list[warnings.WarningMessage]:
    """Run the module's `run`, and say what it warned."""
    namespace: dict = {}
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        exec(compile(textwrap.dedent(code), "snippet.py", "exec"), namespace)
        namespace["run"]()
    return warned


# The flag on a scanned or mapped axis: (lifted, in_axes, arguments); on the default axis of `nn.scan`
# every argument is sliced, `scale` too.
SLICING = [
    ("scan", "(nn.broadcast, 0)", POSITIONAL),
    ("scan", "0", "x, jnp.full(2, 2.0), deterministic"),
    ("vmap", "(0, None, 0)", POSITIONAL),
]
SLICED_IDS = ["scan-axis", "scan-default-axis", "vmap-axis"]
PER_LAYER_FLAGS = ("x, False)", "x, jnp.array([False, False]))")


# Flax's own facts, which the rule's counting follows -------------------------------------------


@pytest.mark.parametrize("lifted", list(LIFTED))
def test_flax_counts_the_module_as_argument_0_through_lifted_transforms(lifted):
    """`static_argnums=(3,)` of `nn.remat` names `deterministic` (`self` is 0) under each lifted
    transform; `(2,)`, counting from `x`, leaves it traced. `nn.jit` counts `self` too: its
    `(3,)` names `deterministic`, and without it the flag is traced before the remat sees it."""
    _run(_code(lifted, static="(3,)"))
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(_code(lifted, static="(2,)"))
    if lifted == "jit":
        with pytest.raises(jax.errors.TracerBoolConversionError):
            _run(_code(lifted, static="(3,)", jit_static="()"))


@pytest.mark.parametrize("lifted", ["scan", "vmap"])
def test_flax_scan_and_vmap_drop_keyword_arguments(lifted):
    """Passed by keyword, the flag never arrives: Flax warns and the default (True) is used, so
    a flag left traced by `static_argnums` is never asked."""
    code = _code(lifted, arguments=KEYWORD, axes={"scan": "(nn.broadcast,)", "vmap": "(0, None)"}[lifted])
    warned = _run(code)
    assert any(
        "kwargs are not supported in" in str(w.message) and "deterministic" in str(w.message) for w in warned
    )


@pytest.mark.parametrize("lifted, axes, arguments", SLICING, ids=list(SLICED_IDS))
def test_flax_slices_an_argument_on_a_scanned_or_mapped_axis_whatever_static_argnums_says(
    lifted, axes, arguments
):
    """A flag per layer (or per row) is a traced array there: static or not, `if` raises."""
    code = _code(lifted, static="(3,)", axes=axes, arguments=arguments).replace(*PER_LAYER_FLAGS)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)


# The rule on those roads -----------------------------------------------------------------------


@pytest.mark.parametrize("holder", list(HOLDERS))
@pytest.mark.parametrize("lifted", list(LIFTED))
def test_a_flag_through_a_lifted_transform_is_reported_and_raises(lifted, holder, tmp_path):
    code = _code(lifted, holder)
    [finding] = findings(code, tmp_path, "JAX119")
    assert anchored_text(code, finding) == "(2,)"
    assert "`deterministic` goes to a `Dropout` as `deterministic`" in finding.message
    assert finding.message.endswith("index 3 makes `deterministic` static")
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    repaired = fixed(code, [finding])
    assert repaired == textwrap.dedent(_code(lifted, holder, static="(2, 3)"))
    assert findings(repaired, tmp_path, "JAX119") == []
    _run(repaired)


@pytest.mark.parametrize("holder", list(HOLDERS))
@pytest.mark.parametrize("lifted", ["scan", "vmap"])
def test_a_flag_scan_or_vmap_drops_as_a_keyword_is_not_reported(lifted, holder, tmp_path):
    code = _code(
        lifted, holder, arguments=KEYWORD, axes={"scan": "(nn.broadcast,)", "vmap": "(0, None)"}[lifted]
    )
    assert findings(code, tmp_path, "JAX119") == []
    _run(code)


@pytest.mark.parametrize("holder", list(HOLDERS))
def test_a_keyword_flag_through_nn_jit_is_reported(holder, tmp_path):
    code = _code("jit", holder, arguments=KEYWORD)
    [finding] = findings(code, tmp_path, "JAX119")
    assert "index 3 makes `deterministic` static" in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)


def test_a_flag_nn_jit_traces_too_says_so(tmp_path):
    """The remat's index is needed and is not enough: `nn.jit` must name it as well."""
    code = _code("jit", jit_static="()")
    [finding] = findings(code, tmp_path, "JAX119")
    assert finding.message.endswith(
        "index 3 makes `deterministic` static; `nn.jit` on line 19 traces `deterministic` too: "
        "its `static_argnums` must name index 3 as well"
    )
    repaired = fixed(code, [finding])
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(repaired)
    _run(repaired.replace("static_argnums=()", "static_argnums=(3,)"))


@pytest.mark.parametrize("lifted, axes, arguments", SLICING, ids=list(SLICED_IDS))
def test_a_sliced_argument_is_data_not_a_static_argnums_mistake(lifted, axes, arguments, tmp_path):
    """What a scanned or mapped axis slices is traced whatever `static_argnums` says (the fact
    above): no index is the fix, and the rule says nothing."""
    code = _code(lifted, axes=axes, arguments=arguments).replace(*PER_LAYER_FLAGS)
    assert findings(code, tmp_path, "JAX119") == []


# The road of a pi0-style model (openpi's gemma.py, written anew): a typechecking decorator on
# the classes, `nn.remat(Block, prevent_cse=False, static_argnums=(5,), policy=...)` counted from
# `self`, `nn.scan` bound in `setup` with the flag broadcast, a positional call, and the flag
# handed to a `Dropout` or a lambda chosen by a conditional expression.

ARRAY_TYPING = """
import functools as ft
from typing import TypeVar, cast

from jaxtyping import jaxtyped

T = TypeVar("T")


def typecheck(t: T) -> T:
    return cast(T, ft.partial(jaxtyped, typechecker=None)(t))
"""

ROAD = """
import flax.linen as nn
import jax
import jax.numpy as jnp

import array_typing as at


def _name(name, i):
    return name if i == 0 else f"{name}_{i}"


@at.typecheck
class Block(nn.Module):
    width: int
    dropout: float = 0.0
    dropout_bdims: tuple[int, ...] = ()

    @nn.compact
    def __call__(self, xs, kv_cache, positions, attn_mask, adarms_cond, deterministic=True):
        drop = nn.Dropout(self.dropout, self.dropout_bdims) if self.dropout else lambda x, _: x

        out = []
        for i, x in enumerate(xs):
            if x is not None:
                x = nn.Dense(self.width, name=_name("mlp", i))(x) * attn_mask[..., :1] + positions[..., None]
                if adarms_cond[i] is not None:
                    x = x + adarms_cond[i][:, None, :]
            out.append(x)
        out = jax.tree.map(lambda x: drop(x, deterministic), out)
        xs = [x if x is None else x + y for x, y in zip(xs, out)]
        return xs, kv_cache


@at.typecheck
class Model(nn.Module):
    width: int
    depth: int
    dropout: float = 0.0

    def setup(self):
        block_cls = nn.remat(
            Block,
            prevent_cse=False,
            static_argnums=(5,),  # 0=self, 6=deterministic
            policy=jax.checkpoint_policies.nothing_saveable,
        )
        self.layers = nn.scan(
            block_cls,
            variable_axes={"params": 0},
            split_rngs={"params": True, "dropout": True},
            in_axes=(0, nn.broadcast, nn.broadcast, nn.broadcast, nn.broadcast),
            length=self.depth,
        )(width=self.width, dropout=self.dropout)

    @at.typecheck
    def __call__(self, embedded, positions, mask, adarms_cond=None, *, kv_cache=None, deterministic: bool = True):
        if adarms_cond is None:
            adarms_cond = [None] * len(embedded)
        embedded, kv_cache = self.layers(embedded, kv_cache, positions, mask, adarms_cond, deterministic)
        return embedded, kv_cache


def run():
    model = Model(width=4, depth=2, dropout=0.1)
    embedded = [jnp.ones((2, 3, 4)), None]
    positions = jnp.zeros((2, 3))
    mask = jnp.ones((2, 3, 3))
    rngs = {"params": jax.random.key(0), "dropout": jax.random.key(1)}
    variables = model.init(rngs, embedded, positions, mask)
    return model.apply(variables, embedded, positions, mask, deterministic=False, rngs={"dropout": jax.random.key(2)})
"""

ROAD_VARIANTS = {
    "as-written": {},
    "default-removed": {"deterministic=True):": "deterministic):"},
    "dropped-directly": {
        "out = jax.tree.map(lambda x: drop(x, deterministic), out)": (
            "out = [x if x is None else drop(x, deterministic) for x in out]"
        )
    },
    "tree-util": {"jax.tree.map(": "jax.tree_util.tree_map("},
    "undecorated": {"    @at.typecheck\n": "", "@at.typecheck\n": ""},
}


def _road(variant: str, static: str = "(5,)") -> str:
    code = ROAD.replace("static_argnums=(5,)", f"static_argnums={static}")
    for old, new in ROAD_VARIANTS[variant].items():
        assert old in code
        code = code.replace(old, new)
    return code


@pytest.fixture
def road_folder(tmp_path, monkeypatch):
    """A folder holding `array_typing.py`, importable while the test runs."""
    pytest.importorskip("jaxtyping")
    (tmp_path / "array_typing.py").write_text(textwrap.dedent(ARRAY_TYPING))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "array_typing", raising=False)
    return tmp_path


@pytest.mark.parametrize("variant", list(ROAD_VARIANTS))
def test_the_road_of_a_pi0_style_model_is_reported_and_raises(variant, road_folder):
    code = _road(variant)
    [finding] = findings(code, road_folder, "JAX119", "gemma.py")
    assert anchored_text(code, finding) == "(5,)"
    assert "`deterministic` goes to a `Dropout` as `deterministic`" in finding.message
    assert finding.message.endswith("index 6 makes `deterministic` static")
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    assert fixed(code, [finding]) == textwrap.dedent(_road(variant, "(5, 6)"))
    _run(fixed(code, [finding]))


@pytest.mark.parametrize("variant", list(ROAD_VARIANTS))
def test_the_road_with_the_right_index_is_quiet_and_runs(variant, road_folder):
    code = _road(variant, "(6,)")
    assert findings(code, road_folder, "JAX119", "gemma.py") == []
    _run(code)


@pytest.mark.parametrize("variant", ["as-written", "undecorated"])
def test_the_road_is_found_by_a_check_of_the_whole_tree(variant, road_folder):
    """A whole-tree check parses a file only as far as its sites need: `Model.__call__`, which
    calls the scan, holds no trigger word and is left unparsed until the roads are followed."""
    from jax_lsp.core import Settings
    from jax_lsp.engine import Workspace
    from jax_lsp.engine.batch import check_paths

    (road_folder / "gemma.py").write_text(textwrap.dedent(_road(variant)))
    workspace = Workspace([road_folder], settings=Settings(select=("JAX119",)))
    found = check_paths(workspace, [road_folder])
    [finding] = found[str(road_folder / "gemma.py")]
    assert "index 6 makes `deterministic` static" in finding.message
