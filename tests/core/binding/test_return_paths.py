"""Return-path analysis: which bodies can fall off the end."""

from __future__ import annotations

import ast
import textwrap

import pytest

from jax_lsp.core.binding.return_paths import return_paths


def falls_off(body: str) -> bool:
    code = "def p(prim, *a, **k):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    return return_paths(ast.parse(code).body[0]).falls_off_end


TERMINATES = {
    "raise at end": "if a:\n    return True\nraise ValueError(prim)",
    "while True": "while True:\n    if a:\n        return True",
    "exhaustive if/else": "if a:\n    return True\nelif b:\n    return False\nelse:\n    return False",
    "try/finally returning": "try:\n    x = 1\nfinally:\n    return False",
    "try/except both return": "try:\n    return f()\nexcept Exception:\n    return False",
    "match wildcard": "match prim.name:\n    case 'sin':\n        return True\n    case _:\n        return False",
    "match capture": "match prim.name:\n    case 'sin':\n        return True\n    case other:\n        return False",
    "assert False": "if a:\n    return True\nassert False",
    "with": "with ctx():\n    return True",
    "for/else": "for x in y:\n    pass\nelse:\n    return False",
    "sys.exit": "import sys\nsys.exit(1)",
}

FALLS = {
    "if without else": "if a:\n    return True",
    "while with break": "while True:\n    break",
    "while True with break in if": "while True:\n    if a:\n        break\n    return True",
    "for": "for x in y:\n    return True",
    "try/except passes": "try:\n    return f()\nexcept Exception:\n    pass",
    "match without wildcard": "match prim.name:\n    case 'sin':\n        return True",
    "match guarded wildcard": "match prim.name:\n    case _ if a:\n        return True",
    "assert condition": "assert a",
    "empty body": "pass",
}


@pytest.mark.parametrize("body", TERMINATES.values(), ids=TERMINATES.keys())
def test_bodies_that_never_fall_off_the_end(body):
    assert not falls_off(body)


@pytest.mark.parametrize("body", FALLS.values(), ids=FALLS.keys())
def test_bodies_that_fall_off_the_end(body):
    assert falls_off(body)


def test_nested_function_returns_do_not_count():
    code = "def p(prim, *a, **k):\n    def inner():\n        return None\n    return True\n"
    paths = return_paths(ast.parse(code).body[0])
    assert [r.value.value for r in paths.returns] == [True]
