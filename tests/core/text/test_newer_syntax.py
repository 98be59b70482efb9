"""Telling syntax only a newer Python parses from real syntax errors, by rewriting it for an older one."""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from jax_lsp.core.text.newer_syntax import downgrade
from tests.conftest import parses

# (statement, the oldest Python that parses it, what it is)
NEWER = [
    ("class ValueHolder[ValueType](Protocol):\n    value: ValueType\n", (3, 12), "type parameters (PEP 695)"),
    ("def loop[T](x: T) -> T:\n    return x\n", (3, 12), "type parameters (PEP 695)"),
    ("@dec\nasync def f[T: (int, str), *Ts, **P](x: T) -> T:\n    return x\n", (3, 12), "type parameters"),
    ("def f[\n    T,  # the item ]\n    U,\n](x): pass\n", (3, 12), "type parameters (PEP 695)"),
    ("type Pair[K, V] = tuple[K, V]\n", (3, 12), "type alias statement (PEP 695)"),
    ("if x:\n    type X = int\n", (3, 12), "type alias statement (PEP 695)"),
    ("def f[T = int](): pass\n", (3, 13), "type parameter defaults (PEP 696)"),
    ("type X[T = int] = list[T]\n", (3, 13), "type parameter defaults (PEP 696)"),
    ('x = f"{d["key"]}"\n', (3, 12), "f-string (PEP 701)"),
    ('x = f"{"\\n".join(lines)}"\n', (3, 12), "f-string (PEP 701)"),
    ('x = f"""{value  # the value\n}"""\n', (3, 12), "f-string (PEP 701)"),
    ('x = f"{1 +\n 2}"\n', (3, 12), "f-string (PEP 701)"),
    ('x = f"{f"{f"{x}"}"}"\n', (3, 12), "f-string (PEP 701)"),
    ('x = {k: f"{v[\'a"\']}" for k, v in d.items()}\n', (3, 12), "f-string (PEP 701)"),
    ('x = f"{d["k"]!r:>{width}} and {y = }"\n', (3, 12), "f-string (PEP 701)"),
    ("try:\n    pass\nexcept* ValueError:\n    pass\n", (3, 11), "except* (PEP 654)"),
    ("x: tuple[int, *Ts]\n", (3, 11), "star in a subscript (PEP 646)"),
    ("def f(*args: *Ts): pass\n", (3, 11), "star annotation (PEP 646)"),
    (
        "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
        (3, 14),
        "except without parentheses (PEP 758)",
    ),
    ('x = t"hello {name}"\n', (3, 14), "t-string (PEP 750)"),
]

# Errors in every Python, many next to newer syntax.
ERRORS = [
    "def loop[T](x: T) -> T:\n    return x +\n",
    "class C[T](:\n    pass\n",
    "def g[**P R](fn): pass\n",
    "def g[T}(x): pass\n",
    "def g[*Ts: int](x): pass\n",
    "def g[def](x): pass\n",
    "def g[](x): pass\n",
    "type X = \n",
    "type X = a, b\n",
    "type X = *a\n",
    'x = f"{d["k"] +}"\n',
    'x = f"{}"\n',
    'x = f"{", ".join(a) for a in xs}"\n',
    'x = f"{x! r}"\n',
    'x = f"{x}}"\n',
    'x = f"{d["k"]}" +\n',
    "try:\n    pass\nexcept A, B as e:\n    pass\n",
    "def f(x) -> int\n    return x\n",
    "def f(**kwargs: *Ts): pass\n",
]


@pytest.mark.parametrize(("code", "python", "what"), NEWER)
def test_newer_syntax_is_rewritten_into_what_an_older_pythonparses(
    code: str, python: tuple, what: str
) -> None:
    running = (python[0], python[1] - 1)
    newer = downgrade(code, running)
    assert newer is not None and newer.python == python
    assert [what in construct.what for construct in newer.constructs] == [True]
    assert newer.text.count("\n") == code.count("\n")
    if sys.version_info[:2] >= running:
        assert parses(newer.text)


@pytest.mark.parametrize(("code", "python", "what"), NEWER)
def test_syntax_the_running_python_knows_is_left_alone(code: str, python: tuple, what: str) -> None:
    assert downgrade(code, python) is None


@pytest.mark.parametrize("code", ERRORS)
@pytest.mark.parametrize("running", [(3, 10), (3, 11)])
def test_a_real_error_stays_an_error(code: str, running: tuple) -> None:
    newer = downgrade(code, running)
    assert newer is None or not parses(newer.text)


def test_columns_stay_where_they_were() -> None:
    code = 'def loop[T](x: T) -> T:\n    y = f"{x["a"]}"\n    return y +\n'
    with pytest.raises(SyntaxError) as error:
        ast.parse(downgrade(code, (3, 11)).text)
    assert (error.value.lineno, error.value.offset) == (3, 15)
    assert downgrade(code, (3, 11)).text.splitlines()[0] == "def loop   (x: T) -> T:"


def test_each_construct_is_named_on_its_own_line() -> None:
    code = 'x = 1\ntype A = int\n\n\ndef f[T](x):\n    return f"{x["k"]}"\n'
    newer = downgrade(code, (3, 11))
    assert [(c.line, c.python, c.what) for c in newer.constructs] == [
        (5, (3, 12), "f-string (PEP 701)"),
        (1, (3, 12), "type alias statement (PEP 695)"),
        (4, (3, 12), "type parameters (PEP 695)"),
    ]


def _interpreters() -> dict[tuple[int, int], str]:
    """Other Pythons on this machine (PATH or pyenv), by version: the claims are checked against them."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [shutil.which(f"python3.{minor}") for minor in range(10, 15)]
    candidates += sorted(glob.glob(os.path.join(root, "versions", "3.1[0-9]*", "bin", "python")))
    found: dict[tuple[int, int], str] = {}
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [candidate, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True
        )
        if done.returncode == 0:
            found.setdefault(tuple(map(int, done.stdout.split())), candidate)
    return found


def _parsed_by(interpreter: str, texts: list[str]) -> list[bool]:
    program = (
        "import ast, json, sys, warnings\nwarnings.simplefilter('ignore')\nresults = []\n"
        "for text in json.load(sys.stdin):\n    try:\n        ast.parse(text)\n        results.append(True)\n"
        "    except SyntaxError:\n        results.append(False)\nprint(json.dumps(results))"
    )
    done = subprocess.run(
        [interpreter, "-c", program], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_claims_hold_for_the_pythons_on_this_machine() -> None:
    interpreters = _interpreters()
    if len(interpreters) < 2:
        pytest.skip("needs Pythons of several versions")
    for version, interpreter in interpreters.items():
        newer = [(code, python) for code, python, _ in NEWER]
        originals = _parsed_by(interpreter, [code for code, _ in newer] + ERRORS)
        assert originals == [version >= python for _, python in newer] + [False] * len(ERRORS), version
        rewritten = [downgrade(code, version) for code, python in newer if version < python]
        assert all(_parsed_by(interpreter, [r.text for r in rewritten])), version
        rewritten_errors = [
            r.text for r in map(lambda code: downgrade(code, version), ERRORS) if r is not None
        ]
        assert not any(_parsed_by(interpreter, rewritten_errors)), version
