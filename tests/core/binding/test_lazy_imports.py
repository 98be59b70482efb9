"""Modules reached through lazy-import helpers (`def _jax(): import jax; return jax`), as
libraries where JAX is optional write them, are followed as imports."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.engine import analyze_text
from tests.rules.site_rules import grad_of_f

HELPERS = """
import functools


def _jax():
    import jax

    return jax


@functools.cache
def _ad():
    try:
        from jax import ad_checkpoint
    except ImportError:
        raise RuntimeError("this feature needs JAX")
    return ad_checkpoint


jnp = _jax().numpy

"""


def codes(code: str, tmp_path, name: str = "m.py") -> list[tuple[str, int]]:
    text = textwrap.dedent(code)
    return [(f.code, f.span.start.line + 1) for f in analyze_text(text, str(tmp_path / name))]


LINE = HELPERS.count("\n") + 1  # the first line after the helpers

CASES = {
    "site through the helper": (
        "def policy(prim, *avals, **params):\n    if prim.name == 'sin':\n        return True\n\n\n"
        "f = _jax().checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)\n",
        ("JAX101", LINE),
    ),
    "helper bound to a name": (
        "jax = _jax()\nf = jax.remat(lambda x: jnp.sin(x), policy=lambda prim, *_, **__: None)\n",
        ("JAX101", LINE + 1),
    ),
    "policy member through the helper": (
        "f = _jax().checkpoint(lambda x: jnp.sin(x), policy=_jax().checkpoint_policies.save_only_these_names)\n",
        ("JAX107", LINE),
    ),
    "class through a cached helper": (
        "def policy(prim, *avals, **params):\n    return _ad().Offloadable\n\n\n"
        "f = _jax().checkpoint(lambda x: jnp.sin(x), policy=policy)\n",
        ("JAX102", LINE + 1),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_site_and_a_policy_reached_through_a_helper_are_checked_and_fail_under_jax(case, tmp_path):
    body, expected = case
    code = HELPERS + body
    assert expected in codes(code, tmp_path)
    with pytest.raises(TypeError):
        grad_of_f(code)


def test_a_helper_from_another_module_is_followed(tmp_path):
    (tmp_path / "lazy.py").write_text(HELPERS)
    code = (
        "from lazy import _jax\n\n"
        "f = _jax().checkpoint(lambda x: x, policy=_jax().checkpoint_policies.dots_saveable())\n"
    )
    assert codes(code, tmp_path, "model.py") == [("JAX106", 3)]


def test_a_helper_that_returns_none_where_the_import_fails_is_followed(tmp_path):
    helper = "def _jax():\n    try:\n        import jax\n    except ImportError:\n        return None\n    return jax\n"
    code = helper + "\n\nf = _jax().checkpoint(lambda x: x, policy=lambda prim, *_, **__: None)\n"
    assert codes(code, tmp_path) == [("JAX101", 9)]


NOT_HELPERS = {
    "returns a global module": "import jax\n\n\ndef _jax():\n    return jax\n",
    "two modules": "def _jax(flag):\n    import jax\n    import numpy\n    if flag:\n        return jax\n    return numpy\n",
    "a method": "class Lazy:\n    def _jax(self):\n        import jax\n        return jax\n\n\n_jax = Lazy()._jax\n",
}


@pytest.mark.parametrize("helper", NOT_HELPERS.values(), ids=NOT_HELPERS.keys())
def test_other_functions_are_not_taken_for_modules(helper, tmp_path):
    code = helper + "\n\nf = _jax().checkpoint(g, policy=lambda prim, *_, **__: None)\n"
    assert codes(code, tmp_path) == []
