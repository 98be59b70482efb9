"""JAX117: static_argnums past the positional parameters, as each wrapper counts them."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.core import Severity
from tests.rules.site_rules import anchored_text, findings

LINEN = """
import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.linen import partitioning


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        return nn.Dense(3)(x) * (2 if train else 1)


Remat = {wrapper}(Block, static_argnums=({index},))


def run():
    x = jnp.ones((2, 3))
    model = Remat()
    return model.apply(model.init(jax.random.key(0), x, True), x, True)
"""


def _run(code: str) -> None:
    namespace: dict = {}
    exec(compile(textwrap.dedent(code), "snippet.py", "exec"), namespace)
    namespace["run"]()


def test_linen_remat_counts_self_and_raises_past_the_end(tmp_path):
    code = LINEN.format(wrapper="nn.remat", index=3)
    [finding] = findings(code, tmp_path, "JAX117")
    assert anchored_text(code, finding) == "3" and finding.severity is Severity.ERROR
    assert "(`self`, `x`, `train`)" in finding.message
    with pytest.raises(ValueError, match="static_argnums"):
        _run(code)
    right = LINEN.format(wrapper="nn.remat", index=2)  # `train`, counting self
    assert findings(right, tmp_path, "JAX117") == []
    _run(right)


def test_partitioning_remat_does_not_count_self_and_ignores_the_index(tmp_path):
    code = LINEN.format(wrapper="partitioning.remat", index=2)
    [finding] = findings(code, tmp_path, "JAX117")
    assert finding.severity is Severity.WARNING
    assert "(`x`, `train`, not counting `self`)" in finding.message
    # Nothing is made static: `train` is traced, and `if train` fails on the tracer.
    jax = pytest.importorskip("jax")
    with pytest.raises(jax.errors.TracerBoolConversionError):
        _run(code)
    right = LINEN.format(wrapper="partitioning.remat", index=1)
    assert findings(right, tmp_path, "JAX117") == []
    _run(right)


NNX = """
import jax.numpy as jnp
from flax import nnx


@nnx.remat(static_argnums=({index},))
def g(x, n):
    return jnp.sin(x) * n


def run():
    return g(jnp.ones(3), 2)
"""


def test_nnx_remat_as_a_decorator_counts_like_jax(tmp_path):
    code = NNX.format(index=2)
    [finding] = findings(code, tmp_path, "JAX117")
    assert anchored_text(code, finding) == "2"
    with pytest.raises(ValueError, match="static_argnums"):
        _run(code)
    assert findings(NNX.format(index=1), tmp_path, "JAX117") == []


HEADER = """
import functools

import jax
import jax.numpy as jnp
"""


@pytest.mark.parametrize(
    "code, reported",
    [
        ("g = functools.partial(jax.checkpoint, static_argnums=(1,))(lambda x: x)\n", "1"),
        ("def h(x, n):\n    return x\n\n\ng = jax.checkpoint(fun=h, static_argnums=[5])\n", "5"),
        (
            "class Layer:\n    @functools.partial(jax.checkpoint, static_argnums=(3,))\n"
            "    def __call__(self, x, n):\n        return x\n",
            "3",
        ),
    ],
    ids=["partial-applied", "fun-keyword-list", "method"],
)
def test_other_forms_are_found(code, reported, tmp_path):
    code = HEADER + code
    [finding] = findings(code, tmp_path, "JAX117")
    assert anchored_text(code, finding) == reported


def test_a_function_of_another_module_is_checked(tmp_path):
    (tmp_path / "layers.py").write_text("def scaled(x, n):\n    return x * n\n")
    code = HEADER + "from layers import scaled\n\ng = jax.checkpoint(scaled, static_argnums=2)\n"
    [finding] = findings(code, tmp_path, "JAX117", name="model.py")
    assert "`scaled` (`x`, `n`)" in finding.message


@pytest.mark.parametrize(
    "code",
    [
        "g = jax.checkpoint(lambda *args: args[0], static_argnums=(3,))\n",
        "g = jax.checkpoint(lambda x, n: x, static_argnums=(1, -2))\n",
        "g = jax.checkpoint(UNKNOWN, static_argnums=(3,))\n",
        "g = jax.checkpoint(lambda x, n: x, static_argnums=STATIC)\n",
        # What another decorator makes of the function is not known.
        "@functools.partial(jax.checkpoint, static_argnums=(2,))\n@functools.cache\ndef g(x):\n    return x\n",
        "@functools.cache\ndef h(x):\n    return x\n\n\ng = jax.checkpoint(h, static_argnums=(2,))\n",
        "g = jax.checkpoint(functools.partial(lambda x, n: x, 1), static_argnums=(1,))\n",
    ],
    ids=[
        "varargs",
        "in-range",
        "unknown-function",
        "unknown-indices",
        "decorated",
        "decorated-name",
        "partial",
    ],
)
def test_what_cannot_be_known_is_not_reported(code, tmp_path):
    assert findings(HEADER + code, tmp_path, "JAX117") == []


def test_linen_with_methods_is_not_reported(tmp_path):
    code = LINEN.format(wrapper="nn.remat", index=3).replace(
        "static_argnums=(3,)", "static_argnums=(3,), methods=['f']"
    )
    assert findings(code, tmp_path, "JAX117") == []


def test_a_decorated_module_class_is_checked(tmp_path):
    """A class decorator returns the class (jaxtyping's `jaxtyped` wraps only `__init__`): its
    `__call__` is the one counted, and Flax raises as for the bare class."""
    pytest.importorskip("jaxtyping")
    decorated = "from jaxtyping import jaxtyped\n\n\n@jaxtyped(typechecker=None)\nclass Block(nn.Module):"
    code = LINEN.format(wrapper="nn.remat", index=3).replace("class Block(nn.Module):", decorated)
    [finding] = findings(code, tmp_path, "JAX117")
    assert "(`self`, `x`, `train`)" in finding.message
    with pytest.raises(ValueError, match="static_argnums"):
        _run(code)
