"""JAX119: a traced parameter of a checkpointed function in Python control flow, as each wrapper
counts `static_argnums`; every reported case is run under JAX and raises, every quiet one runs."""

from __future__ import annotations

import textwrap

import pytest

from tests.rules.site_rules import anchored_text, findings, fixed

jax = pytest.importorskip("jax")

LINEN = """
import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.linen import partitioning


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, scale, train):
        x = nn.Dense(3)(x) * scale
        return x * 0.5 if train else x


Remat = {wrapper}(Block, static_argnums={static})


def run():
    x = jnp.ones((2, 3))
    model = Remat()
    return model.apply(model.init(jax.random.key(0), x, 2.0, True), x, 2.0, True)
"""


def _run(code: str) -> None:
    namespace: dict = {}
    exec(compile(textwrap.dedent(code), "snippet.py", "exec"), namespace)
    namespace["run"]()


@pytest.mark.parametrize(
    "wrapper, wrong, right",
    [("nn.remat", "(2,)", "(2, 3)"), ("partitioning.remat", "(1,)", "(1, 2)")],
    ids=["linen-counts-self", "partitioning-does-not"],
)
def test_each_flax_wrapper_counts_self_its_own_way(wrapper, wrong, right, tmp_path):
    pytest.importorskip("flax")
    code = LINEN.format(wrapper=wrapper, static=wrong)
    [finding] = findings(code, tmp_path, "JAX119")
    assert anchored_text(code, finding) == wrong
    index = right[-2]
    assert "`train` decides a conditional expression on line 12" in finding.message
    assert f"index {index} makes `train` static" in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    repaired = fixed(code, [finding])
    assert repaired == textwrap.dedent(LINEN.format(wrapper=wrapper, static=right))
    assert findings(repaired, tmp_path, "JAX119") == []
    _run(repaired)


def test_partitioning_remat_counting_self_is_traced_too(tmp_path):
    """`partitioning.remat` given the index as `nn.remat` counts it: JAX117 says it is past the
    end, JAX119 which parameter is traced and the index that makes it static."""
    pytest.importorskip("flax")
    code = LINEN.format(wrapper="partitioning.remat", static="(1, 3)")
    [finding] = findings(code, tmp_path, "JAX119")
    assert "index 2 makes `train` static" in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)


NNX = """
import jax.numpy as jnp
from flax import nnx


@nnx.remat({arguments})
def g(x, train):
    if train:
        return jnp.sin(x)
    return x


def run():
    return g(jnp.ones(3), True)
"""


@pytest.mark.parametrize(
    "arguments, repaired",
    [("", "static_argnums=(1,)"), ("prevent_cse=False", "prevent_cse=False, static_argnums=(1,)")],
    ids=["empty", "keyword"],
)
def test_a_call_without_static_argnums_gets_one(arguments, repaired, tmp_path):
    pytest.importorskip("flax")
    code = NNX.format(arguments=arguments)
    [finding] = findings(code, tmp_path, "JAX119")
    assert anchored_text(code, finding) == "nnx.remat"
    assert "(no `static_argnums`)" in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    assert fixed(code, [finding]) == textwrap.dedent(NNX.format(arguments=repaired))
    _run(fixed(code, [finding]))


HEADER = """
import functools

import jax
import jax.numpy as jnp
from jax import lax


"""


def _with_run(body: str, call: str) -> str:
    return HEADER + textwrap.dedent(body) + f"\n\ndef run():\n    return {call}\n"


@pytest.mark.parametrize(
    "body, asked_by",
    [
        ("def g(x, a, b):\n    return x if a else -x * b\n", "a conditional expression"),
        ("def g(x, a, b):\n    while a:\n        x = x * b\n    return x\n", "a `while`"),
        ("def g(x, a, b):\n    assert a\n    return x * b\n", "an `assert`"),
        ("def g(x, a, b):\n    c = a or b\n    return x * c\n", "an `or`"),
        ("def g(x, a, b):\n    return x * (not a) * b\n", "a `not`"),
        ("def g(x, a, b):\n    return x * bool(a) * b\n", "a `bool()`"),
        ("def g(x, a, b):\n    return sum(x * i for i in range(2) if a) * b\n", "a comprehension's `if`"),
    ],
    ids=["ifexp", "while", "assert", "or", "not", "bool", "comprehension"],
)
def test_what_asks_for_a_bool_is_reported_and_raises(body, asked_by, tmp_path):
    code = _with_run(body + "\n\nh = jax.checkpoint(g)\n", "h(jnp.ones(3), True, False)")
    [finding] = findings(code, tmp_path, "JAX119")
    assert f"`a` decides {asked_by}" in finding.message
    assert "`b` decides" not in finding.message  # `b` is only the value of `a or b`, or arithmetic
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)


@pytest.mark.parametrize(
    "body, call",
    [
        (
            "def g(x, mask):\n    if mask is None:\n        return x\n    return x * mask\n",
            "h(jnp.ones(3), None)",
        ),
        ("def g(x, flag):\n    return jnp.where(flag, x, -x)\n", "h(jnp.ones(3), True)"),
        ("def g(x, flag):\n    return lax.cond(flag, lambda: x, lambda: -x)\n", "h(jnp.ones(3), True)"),
        (
            "def g(x, flag):\n    flag = x.shape[0] > 1\n    return x if flag else -x\n",
            "h(jnp.ones(3), True)",
        ),
        (
            "def g(x, flag):\n    def inner(y):\n        return y if flag else -y\n    return x\n",
            "h(jnp.ones(3), True)",
        ),
    ],
    ids=["is-none", "where", "cond", "assigned", "nested-def-unused"],
)
def test_what_does_not_ask_a_traced_value_is_not_reported(body, call, tmp_path):
    code = _with_run(body + "\n\nh = jax.checkpoint(g)\n", call)
    assert findings(code, tmp_path, "JAX119") == []
    _run(code)


@pytest.mark.parametrize(
    "wrapping",
    [
        'jax.checkpoint(g, static_argnums=(1,), static_argnames=("unused",))',
        "jax.checkpoint(g, static_argnums=n)",
        "jax.checkpoint(g, static_argnums=(-1,))",
        'jax.checkpoint(g, static_argnames=("flag",))',
    ],
    ids=["static-by-index", "unknown-index", "from-the-end", "static-by-name"],
)
def test_static_or_unknown_indices_are_not_reported(wrapping, tmp_path):
    """A name in `static_argnames` counts as static: JAX honours it under `jax_remat3`."""
    code = HEADER + "n = (1,)\n\n\ndef g(x, flag):\n    return x if flag else -x\n\n\nh = " + wrapping + "\n"
    assert findings(code, tmp_path, "JAX119") == []


def test_equinox_keeps_python_bools_static_and_is_not_checked(tmp_path):
    eqx = pytest.importorskip("equinox")
    code = "import equinox as eqx\nimport jax.numpy as jnp\n\n\ndef g(x, flag):\n    return x if flag else -x\n\n\nh = eqx.filter_checkpoint(g)\n"
    assert findings(code, tmp_path, "JAX119") == []
    assert eqx.filter_checkpoint(lambda x, flag: x if flag else -x)(jax.numpy.ones(3), True) is not None


def test_several_parameters_one_finding_one_fix(tmp_path):
    body = (
        "def g(x, train, scale, *, sample):\n    if train and sample:\n        x = x * scale\n    return x\n"
    )
    code = _with_run(body + "\n\nh = jax.checkpoint(g)\n", "h(jnp.ones(3), True, 2.0, sample=True)")
    [finding] = findings(code, tmp_path, "JAX119")
    assert "index 1 makes `train` static" in finding.message
    assert "`sample` is keyword-only: no index makes it static" in finding.message
    assert finding.fixes == ()  # `sample` has no index
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)


def test_a_method_checkpointed_by_decorator_counts_self(tmp_path):
    body = (
        "class Layer:\n"
        "    @functools.partial(jax.checkpoint, static_argnums=(0,))\n"
        "    def __call__(self, x, train):\n"
        "        return x if train else -x\n"
        "\n\nlayer = Layer()\n"
    )
    code = _with_run(body, "layer(jnp.ones(3), True)")
    [finding] = findings(code, tmp_path, "JAX119")
    assert "index 2 makes `train` static" in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    repaired = fixed(code, [finding])
    assert "static_argnums=(0, 2)" in repaired
    _run(repaired)


def test_a_function_of_another_module_is_checked(tmp_path):
    (tmp_path / "layers.py").write_text("def block(x, train):\n    return x * 2 if train else x\n")
    code = HEADER + "from layers import block\n\nh = jax.checkpoint(block)\n"
    [finding] = findings(code, tmp_path, "JAX119")
    assert "`train` decides a conditional expression on line 2" in finding.message


DROPOUT = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic):
        return {dropout}


def run():
    x = jnp.ones((2, 3))
    return nn.remat(Block, static_argnums={static})().apply(
        {{}}, x, True, rngs={{"dropout": jax.random.key(0)}}
    )
"""


@pytest.mark.parametrize(
    "dropout",
    [
        "nn.Dropout(0.1)(x, deterministic=deterministic)",
        "nn.Dropout(rate=0.1)(x, deterministic)",
        "nn.Dropout(0.1, deterministic=deterministic)(x)",
    ],
    ids=["call-keyword", "call-position", "layer-keyword"],
)
def test_a_flag_handed_to_dropout_is_tested_there(dropout, tmp_path):
    pytest.importorskip("flax")
    code = DROPOUT.format(dropout=dropout, static="(1,)")
    [finding] = findings(code, tmp_path, "JAX119")
    assert "`deterministic` goes to a `Dropout` as `deterministic`" in finding.message
    assert "index 2 makes `deterministic` static" in finding.message
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    repaired = fixed(code, [finding])
    assert repaired == textwrap.dedent(DROPOUT.format(dropout=dropout, static="(1, 2)"))
    _run(repaired)


def test_a_dropout_of_rate_zero_tests_nothing(tmp_path):
    pytest.importorskip("flax")
    code = DROPOUT.format(dropout="nn.Dropout(0.0)(x, deterministic=deterministic)", static="()")
    assert findings(code, tmp_path, "JAX119") == []
    _run(code)
