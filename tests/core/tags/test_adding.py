"""The edits that tag the values a written policy keeps: each wraps exactly the expression at a
place (`co_positions`' spans, UTF-8 columns), imports `checkpoint_name` once, and touches nothing
else; the edited text parses and, run, computes what it did."""

from __future__ import annotations

import ast

import pytest

from jax_lsp.core.tags.adding import (
    ValuePlace,
    add_tags,
    named_already,
    suggested_name,
    tag_node,
    unique_name,
)
from jax_lsp.core.text.edits import apply_edits

MODEL = '''"""A model."""
from __future__ import annotations

import jax.numpy as jnp


def block(x, w1, w2, scale):
    h = jnp.tanh(x @ w1)
    q, k = jnp.sin(h), jnp.cos(h)
    q /= scale
    return jnp.sum((q * k) @ w2)
'''


def place_of(text: str, segment: str, line: int) -> ValuePlace:
    """The place of ``segment`` on 1-based ``line`` (its first occurrence), UTF-8 columns."""
    row = text.splitlines()[line - 1]
    start = row.index(segment)
    column = len(row[:start].encode("utf-8"))
    return ValuePlace(line, column, line, column + len(segment.encode("utf-8")))


def test_wraps_exactly_the_expression_and_imports_once() -> None:
    places = {place_of(MODEL, "jnp.tanh(x @ w1)", 8): "h", place_of(MODEL, "jnp.sin(h)", 9): "q"}
    tagged = add_tags("model.py", MODEL, places)
    lines = tagged.text.splitlines()
    assert lines[4] == "from jax.ad_checkpoint import checkpoint_name"  # after the module's imports
    assert lines[8] == '    h = checkpoint_name(jnp.tanh(x @ w1), "h")'
    assert lines[9] == '    q, k = checkpoint_name(jnp.sin(h), "q"), jnp.cos(h)'
    # nothing else changed: the edits are one import line and the two expressions
    assert [line for line in lines if line not in MODEL.splitlines()] == [lines[4], lines[8], lines[9]]
    assert apply_edits(MODEL, tagged.edits) == tagged.text
    assert tagged.import_line == 4 and tagged.line_after(8) == 9 and tagged.line_after(3) == 3


def test_nested_values_on_one_line_are_one_edit() -> None:
    inner, outer = place_of(MODEL, "x @ w1", 8), place_of(MODEL, "jnp.tanh(x @ w1)", 8)
    tagged = add_tags("model.py", MODEL, {inner: "h_matmul", outer: "h"})
    assert '    h = checkpoint_name(jnp.tanh(checkpoint_name(x @ w1, "h_matmul")), "h")' in tagged.text
    assert len([e for e in tagged.edits if e.new_text.startswith("checkpoint_name")]) == 1
    ast.parse(tagged.text)


def test_the_edited_code_computes_the_same() -> None:
    np = pytest.importorskip("numpy")
    jax = pytest.importorskip("jax")
    places = {place_of(MODEL, "x @ w1", 8): "a", place_of(MODEL, "(q * k) @ w2", 11): "b"}
    tagged = add_tags("model.py", MODEL, places)
    before, after = {}, {}
    exec(compile(MODEL, "before.py", "exec"), before)
    exec(compile(tagged.text, "after.py", "exec"), after)
    x, w = np.ones((2, 3), np.float32), np.full((3, 3), 0.5, np.float32)
    args = (x, w, w, np.float32(2.0))
    assert float(after["block"](*args)) == pytest.approx(float(before["block"](*args)))
    jaxpr = str(jax.make_jaxpr(after["block"])(*args))
    assert "name=a" in jaxpr and "name=b" in jaxpr


def test_what_cannot_be_wrapped_is_left_out() -> None:
    augmented = ValuePlace(10, 4, 10, 14)  # `q /= scale`: a statement, no expression
    target = place_of(MODEL, "q", 9)  # an assignment's target
    tagged = add_tags("model.py", MODEL, {augmented: "q_scaled", target: "t"})
    assert tagged.names == {} and tagged.text == MODEL and tagged.edits == ()


def test_a_bare_tuple_keeps_its_meaning() -> None:
    pytest.importorskip("jax")
    text = "def f(a, b):\n    pair = a + 1, b + 2\n    return pair\n"
    tagged = add_tags("m.py", text, {place_of(text, "a + 1, b + 2", 2): "pair"})
    assert "pair = checkpoint_name((a + 1, b + 2), 'pair')" in tagged.text
    namespace: dict = {}
    exec(compile(tagged.text, "m.py", "exec"), namespace)
    assert namespace["f"](1, 2) == (2, 4)


def test_the_modules_own_import_and_spelling() -> None:
    text = 'import jax\nfrom jax.ad_checkpoint import checkpoint_name as cn\n\ndef f(x):\n    return cn(x, "y") * x\n'
    tagged = add_tags("m.py", text, {place_of(text, 'cn(x, "y") * x', 5): "z"})
    assert tagged.import_line is None
    assert '    return cn(cn(x, "y") * x, "z")\n' in tagged.text


def test_a_module_binding_the_name_otherwise_gets_an_alias() -> None:
    text = "def checkpoint_name(x):\n    return x\n\n\ndef f(x):\n    return x * 2\n"
    tagged = add_tags("m.py", text, {place_of(text, "x * 2", 6): "double"})
    assert tagged.text.startswith("from jax.ad_checkpoint import checkpoint_name as jax_checkpoint_name\n")
    assert "return jax_checkpoint_name(x * 2, 'double')" in tagged.text


def test_non_ascii_columns_are_bytes() -> None:
    text = "def f(x):\n    é = (x + 1) * 2  # é\n    return é\n"
    place = place_of(text, "(x + 1) * 2", 2)
    assert place.column == 9  # "    é = " is 8 characters and 9 bytes
    tagged = add_tags("m.py", text, {place: "e"})
    assert "    é = checkpoint_name((x + 1) * 2, 'e')  # é\n" in tagged.text


@pytest.mark.parametrize(
    ("source", "segment", "expected"),
    [
        ("h = jnp.tanh(x @ w)\n", "jnp.tanh(x @ w)", "h"),
        ("h = jnp.tanh(x @ w)\n", "x @ w", "h_matmul"),
        ("q, k = f(x), g(x)\n", "g(x)", "k"),
        ("y: int = nn.Dense(4)(x)\n", "nn.Dense(4)(x)", "y"),
        ("return jnp.einsum('ij,jk', a, b)\n", "jnp.einsum('ij,jk', a, b)", "einsum"),
    ],
)
def test_names_say_what_the_value_is(source: str, segment: str, expected: str) -> None:
    text = "def f(x, w, a, b):\n    " + source
    tree = ast.parse(text)
    node = tag_node(tree, place_of(text, segment, 2))
    assert node is not None and suggested_name(tree, node) == expected


def test_unique_names_and_names_given_already() -> None:
    assert unique_name("h", 7, {"g"}) == "h"
    assert unique_name("h", 7, {"h"}) == "h_7"
    assert unique_name("h", 7, {"h", "h_7"}) == "h_7_2"
    text = 'def f(x):\n    return checkpoint_name(x @ x, "kept")\n'
    tree = ast.parse(text)
    node = tag_node(tree, place_of(text, "x @ x", 2))
    assert node is not None and named_already(tree, node) == "kept"
