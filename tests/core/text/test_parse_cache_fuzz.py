"""The editor's per-statement parse cache against a fresh parse, over random typing."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jax_lsp.core.text.source import ParseCache, parse_text

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

# A class large enough to be parsed (and kept) statement by statement of its body.
CLASS_MODULE = (
    '''import jax


@functools.partial(jax.checkpoint, policy=None)
class Model:
    """A docstring with what looks like a method:
    def fake(self):
    """

    size = (3,
  4)

    @staticmethod
    def policy(prim, *avals, **params):
        return prim.name in ["dot_general",
"sin"]

    def apply(self, x):
        if x > 0:
            return jax.checkpoint(lambda y: y, policy=self.policy)(x)
        return x
'''
    + "".join(f"\n    def method_{n}(self):\n        return {n}\n" for n in range(12))
    + "\n\nafter = Model()\n"
)


# Characters that open and close what the statement chunks must not cut through.
TYPED = st.sampled_from(list("()[]{}:'\"\\#=,.x ") + ["\n", "\n    ", '"""', "\t", "é", "if ", "def "])
EDIT = st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.lists(TYPED, max_size=3).map("".join))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # "\\(" typed in a string
@pytest.mark.parametrize("module", [MODULE, CLASS_MODULE], ids=["statements", "large_class"])
@settings(max_examples=300, deadline=None)
@given(st.lists(EDIT, min_size=1, max_size=8))
def test_cached_parse_equals_a_fresh_parse(module, edits):
    for cached, fresh in cached_and_fresh_parses(module, edits):
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


def test_a_large_class_is_parsed_as_a_fresh_parse_parses_it():
    from jax_lsp.core.text.source import LARGE_CLASS_LINES

    # Without the lines that only look like statements (in a string, after an open bracket).
    text = CLASS_MODULE.replace("    def fake(self):\n", "").replace('",\n"sin"]', '", "sin"]')
    assert text.count("\n") > LARGE_CLASS_LINES
    cache = ParseCache()
    first = parse_text(text, "m.py", cache=cache)
    assert ast.dump(first.tree, include_attributes=True) == ast.dump(ast.parse(text), include_attributes=True)
    # An edit inside one method parses that method again, and keeps the others' nodes.
    edited = parse_text(text.replace("return 7", "return 77"), "m.py", cache=cache)
    before, after = (
        next(s for s in m.tree.body if isinstance(s, ast.ClassDef)).body for m in (first, edited)
    )
    changed = [b is not a for b, a in zip(before, after)]
    assert sum(changed) == 1 and len(before) == len(after)


def test_a_large_class_keeps_its_statements_while_another_is_edited():
    # Two large classes, edited in turn (an editor's session: a change here, one there, back here).
    text = "".join(
        f"class {name}:\n" + "".join(f"    def method_{n}(self):\n        return {n}\n\n" for n in range(30))
        for name in ("First", "Second")
    )
    cache = ParseCache()
    parse_text(text, "m.py", cache=cache)
    edits = [("return 7\n", "return 77\n", 1), ("return 8\n", "return 88\n", -1)]
    parsed = []
    for old, new, count in edits + [(new, old, count) for old, new, count in edits]:
        text = text.replace(old, new, count) if count > 0 else new.join(text.rsplit(old, 1))
        parsed.append(parse_text(text, "m.py", cache=cache))
    first_class = [[s for s in m.tree.body if isinstance(s, ast.ClassDef)][0].body for m in parsed]
    # Back in First after an edit of Second: only the method edited is parsed again.
    changed = [b is not a for b, a in zip(first_class[1], first_class[2])]
    assert sum(changed) == 1 and len(changed) == 30
