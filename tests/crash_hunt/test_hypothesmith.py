"""Crash hunt: any Python that hypothesmith generates from the grammar, with policy sites in it.

hypothesmith writes programs no person would (odd whitespace, comments, every statement form);
each is checked (1) followed by a module of policy idioms, (2) as the body of a policy, and
(3) with every function it defines passed as a policy and every call it makes wrapped in
`jax.checkpoint(..., policy=...)`.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.crash_hunt import idioms
from tests.crash_hunt.checks import hunt_settings, survives

SITE = "\n\nimport jax\n\nf = jax.checkpoint(abs, policy={})\n"


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def as_policy_body(code: str) -> str:
    body = textwrap.indent(code or "pass", "    ")
    return "def policy(prim, *avals, **params):\n" + body + "\n    pass\n" + SITE.format("policy")


def with_sites(code: str) -> str:
    """Every call becomes `jax.checkpoint(call, policy=p)`, and every def a policy of a site."""
    tree = ast.parse(code)

    class Wrap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.Call:
            self.generic_visit(node)
            policy = ast.Lambda(
                ast.arguments([], [ast.arg("prim")], ast.arg("a"), [], [], ast.arg("k"), []),
                ast.Constant(None),
            )
            return ast.Call(
                ast.parse("jax.checkpoint", mode="eval").body, [node], [ast.keyword("policy", policy)]
            )

    tree = ast.fix_missing_locations(Wrap().visit(tree))
    names = sorted({n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))})
    sites = "".join(SITE.format(name) for name in names)
    return "import jax\n" + ast.unparse(tree) + "\n" + sites


# Some of hypothesmith's programs use syntax that the Python running the tests warns about.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")


# Importing hypothesmith (and libcst) and building its strategies, which compiles Python's grammar,
# take seconds each: deferred to the first draw, so that collecting the suite (on every xdist
# worker) does not pay for them.
def _programs(*nodes: str) -> st.SearchStrategy[str]:
    """hypothesmith's programs: of Python's grammar, or of the libcst ``nodes`` (by name)."""
    import hypothesmith
    import libcst

    if not nodes:
        return hypothesmith.from_grammar()
    return st.one_of([hypothesmith.from_node(getattr(libcst, node)) for node in nodes])


grammar_programs = st.deferred(_programs)


@hunt_settings(examples=25, cost=2)
@given(grammar_programs, idioms.module())
def test_grammar_programs_with_policy_idioms_survive(code: str, generated: idioms.Generated):
    survives({"m.py": code + "\n" + generated.text})


@hunt_settings(examples=25, cost=2)
@given(st.one_of(grammar_programs, st.deferred(lambda: _programs("If"))))
def test_grammar_programs_as_policy_bodies_survive(code: str):
    text = as_policy_body(code)
    assume(_parses(text))  # indenting may break a line continuation or a string
    survives({"m.py": text})


@hunt_settings(examples=25, cost=2)
@given(st.deferred(lambda: _programs("FunctionDef", "Call", "If")))
def test_generated_calls_and_defs_as_sites_survive(code: str):
    try:
        text = with_sites(code)
    except (SyntaxError, ValueError, RecursionError):
        assume(False)  # ast.unparse cannot write every tree back
    assume(_parses(text))
    survives({"m.py": text})
