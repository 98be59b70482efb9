"""Fixtures shared by the core, CLI and server tests."""

from __future__ import annotations

import ast
import sys

import pytest

# (the oldest Python that parses it, a top-level statement in its syntax)
NEWER_SYNTAX = [
    ((3, 12), "class ValueHolder[ValueType](Protocol):\n    value: ValueType\n"),
    ((3, 13), "def loop[T = int](x: T) -> T:\n    return x\n"),
    ((3, 14), 'greeting = t"hello {name}"\n'),
]


@pytest.fixture
def newer_syntax() -> tuple[tuple[int, int], str]:
    """A top-level statement that only a newer Python than the running one parses, and that Python."""
    for python, statement in NEWER_SYNTAX:
        if python > sys.version_info[:2]:
            return python, statement
    pytest.skip("no syntax newer than this Python is known")


def parses(text: str) -> bool:
    """Whether the running Python parses `text`."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True
