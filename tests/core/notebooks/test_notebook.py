"""Notebooks as modules: IPython syntax made opaque, cells joined and mapped back, edits written
into the file's JSON with every other byte kept."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jax_lsp.core import Settings
from jax_lsp.core.findings import Edit, Span
from jax_lsp.core.notebooks.files import file_could_hold_site, parse_notebook
from jax_lsp.core.notebooks.ipython import opaque
from jax_lsp.core.notebooks.notebook import (
    CellEditError,
    Notebook,
    NotebookError,
    join_cells,
)
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.engine import analyze_text
from tests.conftest import parses

# Each runs in IPython; none is Python.
IPYTHON_LINES = [
    "%timeit f(x)",
    "%time y = f(x)",
    "%matplotlib inline",
    "!pip install -q jax",
    "!!ls -la",
    "files = !ls *.py",
    "a, b = %time f(x)",
    "jax.checkpoint?",
    "jax.checkpoint??",
    "??jax.checkpoint",
    "?jax",
    "/print 1, 2",
    ",print a b",
    ";print a b",
    "pip install jax",
    "cd ..",
    "time f(x)",
    "load_ext autoreload",
    "%timeit f(a,\\\n  b)",
]


@pytest.mark.parametrize("line", IPYTHON_LINES)
def test_ipython_lines_become_python_with_the_same_lines(line: str) -> None:
    cell = f"import jax\n{line}\nx = 1\n"
    assert not parses(cell)
    shown = opaque(cell)
    assert parses(shown)
    assert len(split_lines(shown)) == len(split_lines(cell))
    assert split_lines(shown)[0] == "import jax\n" and split_lines(shown)[-2] == "x = 1\n"


def test_magics_in_an_indented_block_keep_the_block() -> None:
    cell = "for name in files:\n    !echo {name}\n    %time f(name)\n"
    assert opaque(cell) == "for name in files:\n    pass\n    pass\n"


@pytest.mark.parametrize(
    "cell",
    [
        's = """\n%not a magic\n!nor this\n"""\n',  # a string
        "x = (a\n     % b)\n",  # a bracket continues: modulo
        "y = (a\n     != b)\n",
        "z = a \\\n    % b\n",  # a backslash continues
        "time = 3\ntime.sleep(1)\npwd\nrun(x)\ncd / tmp\n",  # automagic names used as Python
        "x = 1  # really?\n",  # help only in a comment
        "q = 'why?'\n",
        "display(x)\nget_ipython().run_line_magic('time', 'f()')\n",
    ],
)
def test_python_that_looks_like_ipython_is_kept(cell: str) -> None:
    assert parses(cell)
    assert opaque(cell) == cell


def test_a_help_query_over_several_lines_is_one_statement() -> None:
    assert opaque("f(a,\n  b)?\nx = 1") == "pass\n\nx = 1"


def test_cell_magics_keep_a_python_body_and_hide_any_other() -> None:
    assert opaque("%%capture out\nx = 1\n") == "\nx = 1\n"
    assert opaque("%%timeit -n 3\nf(x)") == "\nf(x)"
    assert opaque("%%bash\nfor f in *; do echo $f; done\n") == "\n\n"
    assert opaque("%%writefile helper.py\nimport jax\n") == "\n\n"


def test_cells_join_with_their_positions() -> None:
    layout = join_cells([(2, "import jax\n%time x"), (3, ""), (5, "def p(prim):\n    return None")])
    assert layout.text == "import jax\npass\ndef p(prim):\n    return None\n"
    assert layout.cells == ((2, 0, 2), (3, 2, 2), (5, 2, 4))
    assert layout.opaque_lines == {1}
    assert layout.to_cell(Span.of(3, 4, 3, 15)) == (5, Span.of(1, 4, 1, 15))
    assert layout.to_cell(Span.of(1, 0, 2, 3)) is None  # crosses cells
    assert layout.edit_to_cell(Span.of(1, 4, 1, 4)) is None  # on the magic's line
    assert layout.edit_to_cell(Span.of(0, 0, 0, 6)) == (2, Span.of(0, 0, 0, 6))


# Reading --------------------------------------------------------------------------------
def _cell(source, kind="code", **extra) -> dict:
    return {"cell_type": kind, "metadata": {}, "source": source, **extra}


def _notebook(*cells: dict, **top) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **top}


def _bytes(document: dict, indent=1, ascii_only=False) -> bytes:
    return (json.dumps(document, indent=indent, ensure_ascii=ascii_only) + "\n").encode("utf-8")


def test_only_code_cells_are_read_and_numbered_among_all_cells() -> None:
    notebook = Notebook.read(
        _bytes(
            _notebook(
                _cell(["# Title"], "markdown"),
                _cell(["import jax\n", "x = 1"]),
                _cell("raw text", "raw"),
                _cell("y = 2"),
            )
        )
    )
    assert [(c.number, c.source, c.is_list) for c in notebook.cells] == [
        (2, "import jax\nx = 1", True),
        (4, "y = 2", False),
    ]
    assert notebook.layout.text == "import jax\nx = 1\ny = 2\n"


def test_a_notebook_in_another_language_has_no_code() -> None:
    r_kernel = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    assert Notebook.read(_bytes(_notebook(_cell("x <- 1"), metadata=r_kernel))).cells == ()


@pytest.mark.parametrize(
    ("data", "message", "position"),
    [
        (b'{"cells": [\n  {"cell_type": "code",,}', "not JSON: Expecting property name", (1, 23)),
        (b'{"nbformat": 4 "cells": []}', "not JSON: Expecting ',' delimiter", (0, 15)),
        (b'{"nbformat" 4}', "not JSON: Expecting ':' delimiter", (0, 12)),
        (b'{"nbformat": 4, "cells": []} {}', "not JSON: Extra data", (0, 29)),
        (
            b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["x"]}]',
            "not JSON",
            (0, 65),
        ),  # the end
        (b'{"nbformat": 3, "worksheets": []}', "nbformat 3 is not supported", (0, 0)),
        (b"\xff\xfe{}", "not UTF-8", (0, 0)),
        (b"[1, 2]", "not an object", (0, 0)),
        (b'{"nbformat": 4, "metadata": {}}', "no list of `cells`", (0, 0)),
        (
            b'{"nbformat": 4, "cells": [{"cell_type": "code",\n "source": 3}]}',
            "`source` of cell 1 is not text",
            (1, 11),
        ),
    ],
)
def test_an_invalid_notebook_says_what_and_where(
    data: bytes, message: str, position: tuple[int, int]
) -> None:
    with pytest.raises(NotebookError, match="Not a valid notebook") as caught:
        Notebook.read(data)
    assert message in str(caught.value)
    assert (caught.value.line, caught.value.column) == position


def test_an_invalid_notebook_is_a_module_with_one_jax002() -> None:
    module = parse_notebook(b"{not json", "/w/broken.ipynb", only_if_site=True)
    assert module is not None and module.text == ""
    assert [(p.code, p.span.start.line, p.span.start.column) for p in module.problems] == [("JAX002", 0, 1)]


def test_the_byte_filter_sees_a_cells_line_breaks() -> None:
    alias = _bytes(_notebook(_cell(["import jax\n", "ckpt = jax.checkpoint\n"])))
    assert file_could_hold_site("/w/n.ipynb", alias)
    assert not file_could_hold_site("/w/n.ipynb", _bytes(_notebook(_cell("x = 1"))))


def test_the_joined_cells_are_analysed_as_one_module() -> None:
    text = join_cells(
        [
            (1, "import jax\n%matplotlib inline\ndef p(prim, *a, **k):\n    pass"),
            (2, "!pip install jax\nf = jax.checkpoint(abs, policy=p)"),
        ]
    ).text
    assert [(f.code, f.span.start.line) for f in analyze_text(text, "/w/n.ipynb", Settings())] == [
        ("JAX101", 2)
    ]


# Writing ------------------------------------------------------------------------------
POLICY_CELL = [
    "def p(prim, *args, **params):\n",
    '    if prim.name == "sin":  # café\n',
    "        return True",
]


def _fixed(notebook: Notebook) -> Notebook:
    """The JAX101 fix: `return False` after the last line of the cell numbered 2."""
    first = notebook.layout.first_line(2)
    return notebook.with_edits([Edit("n.ipynb", Span.of(first + 2, 19, first + 2, 19), "\n    return False")])


@pytest.mark.parametrize("indent", [1, 2, 4])
@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_fix_rewrites_only_the_cells_source(indent: int, ascii_only: bool) -> None:
    output = {"output_type": "stream", "name": "stdout", "text": ["é\n"]}
    document = _notebook(
        _cell(["# é"], "markdown"), _cell(POLICY_CELL, outputs=[output], execution_count=1, id="x")
    )
    data = _bytes(document, indent, ascii_only)
    notebook = Notebook.read(data)
    assert notebook.to_bytes() == data  # nothing edited: nothing changes
    written = _fixed(notebook).to_bytes()
    expected = json.loads(data)
    expected["cells"][1]["source"] = [*POLICY_CELL[:2], "        return True\n", "    return False"]
    assert json.loads(written) == expected
    # And every byte outside the source list is as it was.
    start, end = notebook.cells[0].value
    raw = data.decode("utf-8")
    assert written.decode("utf-8").startswith(raw[:start]) and written.decode("utf-8").endswith(raw[end:])
    assert written.decode("utf-8").isascii() == ascii_only


def test_a_single_string_source_stays_one_string_and_the_file_keeps_no_final_newline() -> None:
    data = json.dumps(_notebook(_cell("x = 1"), _cell("".join(POLICY_CELL))), indent=2).encode()
    written = _fixed(Notebook.read(data)).to_bytes()
    assert not written.endswith(b"\n")
    assert json.loads(written)["cells"][1]["source"] == "".join(POLICY_CELL) + "\n    return False"


def test_an_edit_on_ipython_syntax_or_across_cells_is_refused() -> None:
    notebook = Notebook.read(_bytes(_notebook(_cell(["x = 1\n", "%time f()"]), _cell("y = 2"))))
    with pytest.raises(CellEditError):
        notebook.with_edits([Edit("n.ipynb", Span.of(1, 4, 1, 4), "\nz = 3")])
    with pytest.raises(CellEditError):
        notebook.with_edits([Edit("n.ipynb", Span.of(0, 0, 2, 1), "")])


def test_file_positions_count_json_escapes() -> None:
    line = 'label = "é\\t😀"; p = None\n'
    data = _bytes(_notebook(_cell(["import jax\n", line])), ascii_only=True)
    notebook = Notebook.read(data)
    file_line, column = notebook.file_position(1, 1, line.index("p ="))
    assert data.decode().splitlines()[file_line][column:].startswith("p = None")


cell_text = st.text(
    st.characters(codec="utf-8", exclude_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(
    cells=st.lists(st.lists(cell_text, max_size=4), min_size=1, max_size=4),
    indent=st.sampled_from([None, 1, 2]),
    ascii_only=st.booleans(),
    cell_index=st.integers(0, 3),
    inserted=cell_text,
)
def test_any_edit_of_one_cell_changes_that_cells_source_alone(
    cells, indent, ascii_only, cell_index, inserted
) -> None:
    sources = ["\n".join(lines) for lines in cells]
    document = _notebook(*[_cell(s.splitlines(True)) for s in sources])
    data = _bytes(document, indent, ascii_only)
    notebook = Notebook.read(data)
    assert notebook.to_bytes() == data
    number = cell_index % len(sources) + 1
    first = notebook.layout.first_line(number)
    if not sources[number - 1] or first in notebook.layout.opaque_lines:
        return  # nothing to edit, or IPython syntax (an edit there is refused: tested above)
    edited = notebook.with_edits([Edit("n.ipynb", Span.of(first, 0, first, 0), inserted)])
    expected = json.loads(data)
    expected["cells"][number - 1]["source"] = (inserted + sources[number - 1]).splitlines(True)
    assert json.loads(edited.to_bytes()) == expected
