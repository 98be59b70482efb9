"""The deepest trees `ast.parse` accepts are analysed: no RecursionError, no internal error.

Each case is built at 90% of the deepest that this Python's `ast.parse` accepts at the default
recursion limit, measured here (Python 3.11: about 2,990 levels for an `elif` chain, a `+`
chain or an attribute chain; 200 nested brackets; 99 nested blocks), and carries a mistake at
its deepest point, so the test also proves the analysis got there.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from jax_lsp.core import Settings
from jax_lsp.engine import Workspace
from jax_lsp.engine.batch import check_paths

HEADER = "import functools\nimport jax\nimport numpy as np\nfrom jax.ad_checkpoint import Offloadable\n\n\n"
SITE = "\n\nf = jax.checkpoint(abs, policy=policy)\n"
TIMEOUT_S = 120  # each case takes about a second


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, RecursionError, MemoryError):
        return False
    return True


@functools.cache
def deepest(make: Callable[[int], str]) -> int:
    """The largest n for which `ast.parse(make(n))` succeeds, at the default recursion limit."""
    assert sys.getrecursionlimit() == 1000
    low, high = 1, 16
    while _parses(make(high)):  # doubling first: texts of nested blocks grow as n squared
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _parses(make(middle)) else (low, middle)
    return low


def check(tmp_path: Path, text: str) -> list:
    """Findings of one file through the workspace (CLI and server path), with no internal
    error, and hovers on a hundred of its lines; a hang fails the test after TIMEOUT_S."""
    path = tmp_path / "deep.py"
    path.write_text(text, encoding="utf-8")
    workspace = Workspace([tmp_path], Settings())
    outcome: dict = {}

    def run() -> None:
        try:
            analyse()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            outcome["raised"] = exc

    def analyse() -> None:
        workspace.index()
        outcome["findings"] = workspace.check_file(path)
        outcome["together"] = check_paths(workspace, [tmp_path]).get(str(path), [])
        lines = text.count("\n") + 1
        for line in sorted({*range(0, lines, max(1, lines // 100)), lines - 3, lines - 2}):  # ~100 hovers
            workspace.describe_policy(path, line, 4)
        outcome["errors"] = workspace.take_internal_errors()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(TIMEOUT_S)
    assert not worker.is_alive(), f"no answer in {TIMEOUT_S} s"
    if "raised" in outcome:
        raise outcome["raised"]
    assert outcome["errors"] == []
    assert outcome["together"] == outcome["findings"]
    return outcome["findings"]


def codes_at(findings, text: str) -> list[tuple[str, str]]:
    lines = text.splitlines()
    return [(f.code, lines[f.span.start.line][f.span.start.column : f.span.end.column]) for f in findings]


# Each builder makes a whole module from a depth n; the policy's mistake sits at the deepest point.
def elif_chain(n: int) -> str:
    branches = "".join(f"    elif prim.name == 'op{i}':\n        return True\n" for i in range(n))
    return (
        HEADER
        + "def policy(prim, *avals, **params):\n    if avals:\n        return False\n"
        + branches
        + "    else:\n        return None\n"
        + SITE
    )


def plus_chain(n: int) -> str:
    # `np.prod(...)` is the innermost left operand: the whole sum is a NumPy value.
    terms = " + ".join(["np.prod(avals[0].shape)"] + [f"a{i}" for i in range(n)])
    return HEADER + f"def policy(prim, *avals, **params):\n    return {terms} > 8\n" + SITE


def power_chain(n: int) -> str:
    # Right-nested: `2 ** (2 ** (... ** np.max(x)))`, the NumPy value innermost on the right.
    return (
        HEADER
        + "def policy(prim, *avals, **params):\n    return "
        + "2 ** " * n
        + "np.max(avals[0]) > 8\n"
        + SITE
    )


def negations(n: int) -> str:
    return (
        HEADER
        + "def policy(prim, *avals, **params):\n    return "
        + "-" * n
        + "np.sum(avals[0]) > 0\n"
        + SITE
    )


def conditional_chain(n: int) -> str:
    # `True if c0 else True if c1 else ... else None`: nested through `orelse`.
    choices = "".join(f"True if prim.name == 'op{i}' else " for i in range(n))
    return HEADER + f"policy = lambda prim, *avals, **params: {choices}None\n" + SITE


def attribute_chain(n: int) -> str:
    chain = "config" + ".options" * n
    return (
        HEADER
        + f"f = jax.checkpoint(abs, policy={chain})\ng = {chain}.remat(abs, policy=1)\n"
        + "h = jax.checkpoint(abs, policy=jax.checkpoint_policies.dots_saveable())\n"
    )


def call_chain(n: int) -> str:
    return (
        HEADER
        + "def make(n):\n    return lambda prim, *a, **k: None\n\n\n"
        + "f = jax.checkpoint(abs, policy=make"
        + "(0)" * n
        + ")\n"
        + "g = jax.checkpoint(abs, policy=jax.checkpoint_policies.dots_saveable())\n"
    )


def subscript_chain(n: int) -> str:
    return (
        HEADER
        + "TABLE = {0: lambda prim, *a, **k: None}\n"
        + "f = jax.checkpoint(abs, policy=TABLE"
        + "[0]" * n
        + ")\n"
        + "g = jax.checkpoint(abs, policy=TABLE[0])\n"
    )


def nested_lambdas(n: int) -> str:
    return (
        HEADER
        + "policy = lambda prim, *a, **k: "
        + "lambda: " * n
        + "None\n"
        + "f = jax.checkpoint(abs, policy=lambda *a, **k: "
        + "lambda: " * n
        + "None)\n"
        + "g = jax.checkpoint(abs, policy=lambda prim, *a, **k: prim == 'sin')\n"
    )


def method_chain(n: int) -> str:
    chain = "prim" + ".lower()[0]" * n
    return (
        HEADER
        + f"def policy(prim, *avals, **params):\n    return None if {chain} else True\n"
        + "\n\ng = jax.checkpoint(abs, policy=lambda prim, *a, **k: prim == 'sin')\n"
        + SITE
    )


def site_in_every_branch(n: int) -> str:
    branches = "".join(
        f"elif MODE == {i}:\n    f = jax.checkpoint(abs, policy=jax.checkpoint_policies.dots_saveable())\n"
        for i in range(n)
    )
    return HEADER + "MODE = 0\nif MODE < 0:\n    pass\n" + branches


def nested_blocks(n: int) -> str:
    """`if`/`for`/`while`/`try`/`with` blocks inside one another, as deep as indentation allows."""
    kinds = ["if avals:", "for a in avals:", "while avals:", "with lock:", "try:"]
    lines, closers = [], []
    for depth in range(n):
        kind = kinds[depth % len(kinds)]
        lines.append("    " * (depth + 1) + kind)
        closers.append((depth, kind))
    lines.append("    " * (n + 1) + "return prim == 'sin'")
    for depth, kind in reversed(closers):
        if kind == "try:":
            lines.append("    " * (depth + 1) + "finally:")
            lines.append("    " * (depth + 2) + "pass")
    return HEADER + "def policy(prim, *avals, **params):\n" + "\n".join(lines) + "\n    return False\n" + SITE


def nested_functions(n: int) -> str:
    """A policy holding functions nested as deep as indentation allows, a site in the innermost."""
    lines = ["def policy(prim, *avals, **params):"]
    lines += ["    " * depth + f"def inner{depth}(x):" for depth in range(1, n)]
    lines.append("    " * n + "return jax.checkpoint(abs, policy=jax.checkpoint_policies.dots_saveable())")
    lines.append("    return prim == 'sin'")
    return HEADER + "\n".join(lines) + "\n" + SITE


def nested_brackets(n: int) -> str:
    return (
        HEADER
        + "def policy(prim, *avals, **params):\n    return "
        + "(" * n
        + "prim == 'sin'"
        + ")" * n
        + "\n\n\nnames = "
        + "[" * n
        + "]" * n
        + "\n"
        + SITE
    )


def nested_calls(n: int) -> str:
    return (
        HEADER
        + "f = jax.checkpoint(abs, policy="
        + "functools.partial(" * n
        + "lambda *a, **k: None"
        + ")" * n
        + ")\n"
    )


def many_flat_operands(n: int) -> str:
    """Long but flat: one `or` of n operands, n decorators, n keyword arguments."""
    operands = " or ".join(f"prim.name == 'op{i}'" for i in range(n))
    decorators = "@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable())\n" * n
    keywords = ", ".join(f"k{i}={i}" for i in range(n))
    return (
        HEADER
        + f"def policy(prim, *avals, **params):\n    return {operands} or prim == 'sin'\n\n\n"
        + decorators
        + "def g(x):\n    return x\n\n\n"
        + f"f = jax.checkpoint(abs, policy=policy, {keywords})\n"
    )


CASES = {
    "elif chain": (elif_chain, [("JAX101", "None")]),
    "`+` chain": (plus_chain, "JAX103"),
    "`**` chain": (power_chain, "JAX103"),
    "unary minus chain": (negations, "JAX103"),
    "conditional expression chain": (conditional_chain, [("JAX101", "None")]),
    "attribute chain": (attribute_chain, ["JAX106"]),
    "call chain": (call_chain, ["JAX106"]),
    "subscript chain": (subscript_chain, [("JAX101", "None")]),
    # The policy at `f` returns a lambda, a function object where JAX wants a decision (JAX103).
    "nested lambdas": (nested_lambdas, ["JAX103", "JAX104"]),
    "method chain": (method_chain, [("JAX101", "None"), ("JAX104", "prim == 'sin'")]),
    "site in every `elif`": (site_in_every_branch, "every branch"),
    "nested blocks": (nested_blocks, [("JAX104", "prim == 'sin'")]),
    "nested functions": (nested_functions, ["JAX106", "JAX104"]),
    "nested brackets": (nested_brackets, [("JAX104", "prim == 'sin'")]),
    # Resolution follows 12 steps (MAX_DEPTH): the lambda is out of reach, and nothing raises.
    "nested partials": (nested_calls, []),
}


@pytest.mark.parametrize("name", list(CASES))
def test_deepest_parsable_structures_are_analysed(name, tmp_path):
    make, expected = CASES[name]
    depth = deepest(make) * 9 // 10
    text = make(depth)
    findings = check(tmp_path, text)
    found = codes_at(findings, text)
    if expected == "every branch":
        assert [code for code, _ in found] == ["JAX106"] * depth
    elif isinstance(expected, str):  # one finding of that code, on the whole returned value
        assert [code for code, _ in found] == [expected]
    elif all(isinstance(e, str) for e in expected):
        assert [code for code, _ in found] == expected
    else:
        assert found == expected


def test_the_deep_cases_are_thousands_deep():
    """At 90% of what the parser accepts, the chains are thousands deep (blocks: indentation
    stops at 100 levels), so the cases above are not shallow by a builder's mistake."""
    assert min(deepest(make) for make in (elif_chain, plus_chain, attribute_chain, conditional_chain)) > 2_000
    assert 90 <= deepest(nested_blocks) < 100


def test_long_flat_structures(tmp_path):
    text = many_flat_operands(3_000)
    findings = check(tmp_path, text)
    assert [code for code, _ in codes_at(findings, text)] == ["JAX104"] + ["JAX106"] * 3_000
