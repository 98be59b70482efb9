"""The editor's per-statement parse cache against a fresh parse, over random typing."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jax_lsp.core.source import ParseCache, parse_text

MODULE = '''import functools
import jax

x = """
def not_code(:
"""


@functools.partial(jax.checkpoint, policy=lambda prim, *a, **k: prim.name == "sin")
def f(x):
    if x > 0:
        return jax.numpy.sin(x)
    else:
        return (x +
1)


def policy(prim, *avals, **params):
    return (prim.name in [
"dot_general", "sin"]) or \\
False
'''

# Characters that open and close what the statement chunks must not cut through.
TYPED = st.sampled_from(list("()[]{}:'\"\\#=,.x ") + ["\n", "\n    ", '"""', "\t", "é", "if ", "def "])
EDIT = st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.lists(TYPED, max_size=3).map("".join))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # "\\(" typed in a string
@settings(max_examples=300, deadline=None)
@given(st.lists(EDIT, min_size=1, max_size=8))
def test_cached_parse_equals_a_fresh_parse(edits):
    for cached, fresh in cached_and_fresh_parses(MODULE, edits):
        assert ast.dump(cached.tree, include_attributes=True) == ast.dump(fresh.tree, include_attributes=True)
        assert cached.problems == fresh.problems


def cached_and_fresh_parses(text: str, edits):
    """After each edit of `text`: its parse through a cache that saw every earlier text, and a fresh one."""
    cache = ParseCache()
    parse_text(text, "m.py", cache=cache)
    for position, deleted, inserted in edits:
        position %= len(text) + 1
        text = text[:position] + inserted + text[position + deleted :]
        yield parse_text(text, "m.py", cache=cache), parse_text(text, "m.py")
