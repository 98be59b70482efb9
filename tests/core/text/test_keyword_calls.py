"""core.text.keyword_calls: a call's callee and where a called name comes from, read from the
text with its strings and comments blanked; no answer wherever the text could be read otherwise."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.core.text.keyword_calls import NO_CALL, WINDOW, blanked, callees, defines, imported_from


def _code(text: str) -> bytes:
    code = blanked(textwrap.dedent(text).encode())
    assert code is not None
    return code


def _callees_of_policy(text: str) -> list[bytes | None] | None:
    data = textwrap.dedent(text).encode()
    code = blanked(data)
    assert code is not None
    keywords, at = [], data.find(b"policy")
    while at >= 0:
        keywords.append(at)
        at = data.find(b"policy", at + 1)
    return callees(code, keywords)


def test_blanking_keeps_offsets_and_lines_and_leaves_no_quote():
    data = b'x = "a(b" + f"{y}"  # c)\n"""doc\nmore("""\nz = 1\n'
    code = blanked(data)
    assert code is not None and len(code) == len(data)
    assert code.count(b"\n") == data.count(b"\n")
    assert b"(" not in code and b"#" not in code and b"z = 1" in code
    assert blanked(b'x = "unterminated\n') is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("block = auto_remat(\n    Layer,  # a comment)\n    policy=config.remat,\n)\n", [b"auto_remat"]),
        ("f = nn . remat(g, policy=p)\n", [b"nn.remat"]),
        ('f = auto_remat(g, name="(", policy=p)\n', [b"auto_remat"]),
        ("policy = jax.checkpoint_policies.dots_saveable\n", [NO_CALL]),  # an assignment
        ("self.policy = p\n", [NO_CALL]),
        ("def wrap(f, policy=None):\n    return f\n", [NO_CALL]),  # a parameter
        ("class Block(Base, policy=p):\n    pass\n", [NO_CALL]),
        ("f = make()(g, policy=p)\n", [None]),  # no dotted name is called
        ("f = table[0](g, policy=p)\n", [None]),
        ("f = {policy == 1}\n", [None]),  # at a literal's bracket
    ],
)
def test_the_callee_of_a_keyword(text, expected):
    assert _callees_of_policy(text) == expected


def test_a_call_begun_too_far_above_is_not_told_nor_are_unpaired_brackets():
    far = "f = auto_remat(\n" + "    x,\n" * (WINDOW // 6) + "    policy=p,\n)\n"
    assert _callees_of_policy(far) == [None]
    near_the_top = "policy = 1\n" + "x = (\n" + "    1,\n" * (WINDOW // 6) + ")\n"
    assert _callees_of_policy(near_the_top) == [NO_CALL]
    assert _callees_of_policy("f = auto_remat(g, policy=p))\n") is None


IMPORTED = """
    '''Models; auto_remat(...) is named here: in a docstring.'''
    from easydel.infra.utils import ACT2FN, auto_remat, block_wise_ffn
    import jax


    class Model:
        def __init__(self, config):
            # auto_remat, in a comment
            self.block = auto_remat(Layer, policy=config.gradient_checkpointing)
    """


@pytest.mark.parametrize(
    "added",
    [
        "auto_remat = jax.checkpoint\n",  # bound again
        "def build(auto_remat):\n    return auto_remat(f, policy=p)\n",  # a parameter
        "def auto_remat(f, policy=None):\n    return f\n",
        "for auto_remat in makers:\n    pass\n",
        "from elsewhere import auto_remat\n",  # imported twice
        "from elsewhere import *\n",  # a star import may bind it
        "if (auto_remat := pick()):\n    pass\n",
        "x: auto_remat\n",
    ],
)
def test_a_name_bound_otherwise_than_by_its_one_import_is_not_followed(added):
    assert imported_from(_code(IMPORTED), b"auto_remat") == b"easydel.infra.utils"
    assert imported_from(_code(IMPORTED + added), b"auto_remat") is None


def test_an_import_under_another_name_or_relative_or_not_at_the_top_is_not_followed():
    assert (
        imported_from(_code("from a import b as auto_remat\nauto_remat(f, policy=p)\n"), b"auto_remat")
        is None
    )
    assert (
        imported_from(_code("from .utils import auto_remat\nauto_remat(f, policy=p)\n"), b"auto_remat")
        is None
    )
    local = "def f():\n    from a.utils import auto_remat\n    return auto_remat(g, policy=p)\n"
    assert imported_from(_code(local), b"auto_remat") is None
    parenthesized = "from a.utils import (\n    ACT2FN,\n    auto_remat,\n)\nauto_remat(f, policy=p)\n"
    assert imported_from(_code(parenthesized), b"auto_remat") == b"a.utils"


DEFINED = b'''
from typing import overload


@overload
def auto_remat(module, /, *, policy=None): ...


def auto_remat(*modules, policy=None):
    """Wrap each module: `auto_remat(Block, policy="dots")`."""
    setattr(modules[0], "_auto_remat_wrapped", True)
    return modules if len(modules) > 1 else auto_remat(modules[0])
'''


@pytest.mark.parametrize(
    ("added", "expected"),
    [
        (b"", True),
        (b"auto_remat = jax.checkpoint\n", False),
        (b"if jax:\n    def auto_remat(f):\n        return f\n", False),  # bound in a block, not at the top
        (b"from jax import checkpoint as auto_remat\n", False),
        (b"__all__ = [auto_remat]\n", False),
    ],
)
def test_a_name_defined_by_def_alone(added, expected):
    assert defines(DEFINED + added, b"auto_remat") is expected
    assert not defines(b"import jax\n", b"auto_remat")
