"""JAX119 on the roads from a checkpoint to its calls (a parameter that keeps its default on
every one is not traced) and on flags handed to callees bound to names. Each reported case runs
under real JAX and raises `TracerBoolConversionError`; each quiet one runs."""

from __future__ import annotations

import textwrap

import pytest

from tests.rules.site_rules import findings

jax = pytest.importorskip("jax")


def _run(code: str) -> None:
    namespace: dict = {}
    exec(compile(textwrap.dedent(code), "snippet.py", "exec"), namespace)
    namespace["run"]()


def _reported_and_raises(code: str, tmp_path, message: str) -> None:
    [finding] = findings(code, tmp_path, "JAX119")
    assert message in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)


def _quiet_and_runs(code: str, tmp_path) -> None:
    assert findings(code, tmp_path, "JAX119") == []
    _run(code)


HEADER = """
import functools

import jax
import jax.numpy as jnp


def g(x, flag=False):
    if flag:
        return x * 2.0
    return x


def step(carry, x, flag=False):
    return (carry * 2.0 if flag else carry), x


"""

PASSES_THE_FLAG = {
    "positional": "def run():\n    return jax.checkpoint(g)(jnp.ones(3), True)\n",
    "keyword": "def run():\n    return jax.checkpoint(g)(jnp.ones(3), flag=True)\n",
    "by-name": "h = jax.checkpoint(g)\n\n\ndef run():\n    return h(jnp.ones(3), True)\n",
    "partial": "def run():\n    return functools.partial(jax.checkpoint(g), flag=True)(jnp.ones(3))\n",
    "vmap": "def run():\n    return jax.vmap(jax.checkpoint(g), in_axes=(0, None))(jnp.ones((2, 3)), True)\n",
    "star-args": "def run():\n    args = (jnp.ones(3), True)\n    return jax.checkpoint(g)(*args)\n",
    "decorator": (
        "@functools.partial(jax.checkpoint, static_argnums=())\n"
        "def k(x, flag=False):\n    return x * 2.0 if flag else x\n\n\n"
        "def run():\n    return k(jnp.ones(3), True)\n"
    ),
}


@pytest.mark.parametrize("road", list(PASSES_THE_FLAG), ids=list(PASSES_THE_FLAG))
def test_a_defaulted_flag_that_some_call_passes_is_reported(road, tmp_path):
    _reported_and_raises(HEADER + PASSES_THE_FLAG[road], tmp_path, "`flag` decides")


KEEPS_THE_DEFAULT = {
    "called-without": "h = jax.checkpoint(g)\n\n\ndef run():\n    return h(jnp.ones(3))\n",
    "lax-scan": "def run():\n    return jax.lax.scan(jax.checkpoint(step), 1.0, jnp.ones(3))\n",
    "partial-binds-x": "def run():\n    return functools.partial(jax.checkpoint(g), jnp.ones(3))()\n",
    "other-function-passes": (
        "h = jax.checkpoint(g)\n\n\ndef run():\n    g(jnp.ones(3), True)\n    return h(jnp.ones(3))\n"
    ),
}


@pytest.mark.parametrize("road", list(KEEPS_THE_DEFAULT), ids=list(KEEPS_THE_DEFAULT))
def test_a_defaulted_flag_no_call_passes_is_not_traced(road, tmp_path):
    _quiet_and_runs(HEADER + KEEPS_THE_DEFAULT[road], tmp_path)


def test_callers_unknown_report_only_a_parameter_without_default(tmp_path):
    """`h` may be called from another module: a default may be all it ever gets, a parameter
    without one is always passed."""
    code = HEADER + "h = jax.checkpoint(g)\nk = jax.checkpoint(lambda x, flag: x if flag else -x)\n"
    [finding] = findings(code, tmp_path, "JAX119")
    assert "the first call of the lambda" in finding.message


# A faithful copy of the pattern the issue found: a nested function remat'd, scanned with
# `nn.scan`, the scan called without the flag; only the direct, unwrapped call passes it.
SCANNED = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class Encoder(nn.Module):
    depth: int = 2

    @nn.compact
    def __call__(self, x, query_owg_mask=None):
        def _scan_fn(model, carry, query_owg_mask=False):
            h = nn.Dense(x.shape[-1])(carry)
            if query_owg_mask:
                h = h * 0.0
            return carry + h, None

        scan = nn.scan(
            nn.remat(_scan_fn),
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=self.depth,
        )
        if query_owg_mask is not None:
            carry, _ = _scan_fn(self, x, query_owg_mask=True)
        else:
            carry, _ = scan({scan_arguments})
        return carry


def run():
    x = jnp.ones((2, 3))
    model = Encoder()
    for mask in (None, True):
        params = model.init(jax.random.key(0), x, mask)
        jax.grad(lambda p: model.apply(p, x, mask).sum())(params)
"""


def test_a_flag_an_nn_scan_of_nn_remat_never_passes_is_not_traced(tmp_path):
    pytest.importorskip("flax")
    _quiet_and_runs(SCANNED.replace("{scan_arguments}", "self, x"), tmp_path)


def test_a_flag_the_remat_call_itself_passes_is_reported(tmp_path):
    pytest.importorskip("flax")
    code = SCANNED.replace("scan = nn.scan(", "remat_fn = nn.remat(_scan_fn)\n        scan = nn.scan(")
    code = code.replace("carry, _ = scan({scan_arguments})", "carry, _ = remat_fn(self, x, True)")
    _reported_and_raises(code, tmp_path, "`query_owg_mask` decides an `if`")


# flax's own test of a keyword flag given to a remat'd module's `apply` (linen_transforms_test).
KEYWORD_TO_APPLY = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class ConditionalReLU(nn.Module):
    @nn.compact
    def __call__(self, input, apply_relu: bool = False):
        return nn.relu(input) if apply_relu else input


def run():
    x = jnp.ones((4, 4)) * -1
    remat_model = nn.remat(ConditionalReLU)()
    p = remat_model.init(jax.random.key(0), x)
    return jax.grad(lambda x: remat_model.apply(p, x{keyword}).sum())(x)
"""


def test_a_keyword_flag_given_to_apply_is_reported(tmp_path):
    pytest.importorskip("flax")
    code = KEYWORD_TO_APPLY.replace("{keyword}", ", apply_relu=True")
    _reported_and_raises(code, tmp_path, "`apply_relu` decides a conditional expression")


def test_a_module_applied_without_the_flag_is_not_traced(tmp_path):
    pytest.importorskip("flax")
    _quiet_and_runs(KEYWORD_TO_APPLY.replace("{keyword}", ""), tmp_path)


INSTANCE = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train=False):
        return nn.Dense(3)(x) * (0.5 if train else 1.0)


class Model(nn.Module):
    def setup(self):
        self.block = nn.remat(Block)()

    def __call__(self, x):
        return self.block({arguments})


def run():
    x = jnp.ones((2, 3))
    return Model().init(jax.random.key(0), x)
"""


def test_an_instance_bound_in_setup_and_called_with_the_flag_is_reported(tmp_path):
    pytest.importorskip("flax")
    _reported_and_raises(INSTANCE.replace("{arguments}", "x, True"), tmp_path, "`train` decides")


def test_an_instance_bound_in_setup_and_called_without_it_is_not_traced(tmp_path):
    pytest.importorskip("flax")
    _quiet_and_runs(INSTANCE.replace("{arguments}", "x"), tmp_path)


# A faithful copy of the miss the issue found: the traced `deterministic` goes to dropout
# through a name bound to a conditional expression, called in a lambda.
DROPOUT_BY_NAME = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    rate: float = 0.1
    dropout: bool = True

    @nn.compact
    def __call__(self, tree, deterministic):
        drop = nn.Dropout(self.rate) if self.dropout else (lambda x, _: x)
        tree = jax.tree.map(lambda x: nn.Dense(x.shape[-1])(x), tree)
        return jax.tree.map(lambda x: drop(x, deterministic), tree)


RematBlock = nn.remat(Block, static_argnums={static})


def run():
    tree = {"a": jnp.ones((2, 3)), "b": jnp.ones((2, 4))}
    model = RematBlock()
    rngs = {"params": jax.random.key(0), "dropout": jax.random.key(1)}
    variables = model.init(rngs, tree, True)
    return model.apply(variables, tree, False, rngs={"dropout": jax.random.key(2)})
"""


def test_a_flag_handed_to_dropout_through_a_name_is_reported(tmp_path):
    pytest.importorskip("flax")
    code = DROPOUT_BY_NAME.replace("{static}", "(1,)")
    _reported_and_raises(code, tmp_path, "`deterministic` goes to a `Dropout` as `deterministic`")
    _quiet_and_runs(DROPOUT_BY_NAME.replace("{static}", "(2,)"), tmp_path)


CALLEES = {
    "nnx-dropout-by-name": (
        "def g(x, deterministic):\n"
        "    drop = nnx.Dropout(0.5, rngs=nnx.Rngs(0))\n"
        "    return drop(x, deterministic=deterministic)\n",
        "goes to a `Dropout` as `deterministic`",
    ),
    "nnx-dropout": (
        "def g(x, deterministic):\n    return nnx.Dropout(0.5, rngs=nnx.Rngs(0))(x, deterministic=deterministic)\n",
        "goes to a `Dropout` as `deterministic`",
    ),
    "function": (
        "def scaled(y, train):\n    if train:\n        return y * 0.5\n    return y\n\n\n"
        "def g(x, train):\n    return scaled(x, train=train)\n",
        "`train` goes to `scaled`, where `train` decides an `if` (line",
    ),
    "lambda-by-name": (
        "def g(x, train):\n    scale = lambda y, t: y * 0.5 if t else y\n    return scale(x, not train)\n",
        "`train` goes to `scale`, where `t` decides a conditional expression (line",
    ),
    "two-deep": (
        "def inner(y, on):\n    return y if on else -y\n\n\n"
        "def outer(y, flag):\n    return inner(y, flag)\n\n\n"
        "def g(x, train):\n    return outer(x, train)\n",
        "`train` goes to `outer`, where `flag` goes to `inner`, where `on` decides",
    ),
}

CALLEE_HEADER = """
import jax
import jax.numpy as jnp
from flax import nnx


"""


@pytest.mark.parametrize("case", list(CALLEES), ids=list(CALLEES))
def test_a_flag_a_callee_bound_to_a_name_tests_is_reported(case, tmp_path):
    pytest.importorskip("flax")
    body, message = CALLEES[case]
    code = CALLEE_HEADER + body + "\n\ndef run():\n    return jax.checkpoint(g)(jnp.ones(3), True)\n"
    _reported_and_raises(code, tmp_path, message)


QUIET_CALLEES = {
    "is-none": "def helper(y, mask):\n    return y if mask is None else y * mask\n\n\n"
    "def g(x, train):\n    return helper(x, train)\n",
    "where": "def helper(y, on):\n    return jnp.where(on, y, -y)\n\n\n"
    "def g(x, train):\n    return helper(x, train)\n",
    "branches-ignore-it": "def g(x, train):\n    f = (lambda y, _: y) if x.shape[0] else (lambda y, t: -y)\n"
    "    return f(x, train)\n",
    "dropout-rate-zero": "def g(x, train):\n    drop = nnx.Dropout(0.0, rngs=nnx.Rngs(0))\n"
    "    return drop(x, deterministic=train)\n",
    "lambda-parameter-hides-it": "def g(x, train):\n    return jax.tree.map(lambda train: train * 2.0, x)\n",
}


@pytest.mark.parametrize("case", list(QUIET_CALLEES), ids=list(QUIET_CALLEES))
def test_a_callee_that_asks_nothing_of_the_flag_is_not_reported(case, tmp_path):
    pytest.importorskip("flax")
    code = (
        CALLEE_HEADER
        + QUIET_CALLEES[case]
        + "\n\ndef run():\n    return jax.checkpoint(g)(jnp.ones(3), True)\n"
    )
    _quiet_and_runs(code, tmp_path)
