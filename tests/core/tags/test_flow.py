"""The name flow's tables: what the statements holding a word say about it, read from a file
parsed only where the words asked for are."""

from __future__ import annotations

import ast
import textwrap

from jax_lsp.core.tags.flow import FileFacts
from jax_lsp.core.text.source import SourceModule

CONFIG = textwrap.dedent(
    """
    import functools


    @functools.partial(tag, name="decorated")
    def first(x, name="default"):
        def inner(y):
            name = "local"
            return y

        return inner


    def unrelated(x):
        return x


    class Config:
        name = "class level"
    """
)


def _parsed_sources(monkeypatch) -> list[str]:
    sources: list[str] = []
    parse = ast.parse
    monkeypatch.setattr(
        ast, "parse", lambda source, *args, **kwargs: sources.append(source) or parse(source, *args, **kwargs)
    )
    return sources


def _names(facts: FileFacts) -> dict[str, list[str]]:
    tables = facts.tables("name")
    return {
        "keywords": [ast.literal_eval(value) for value, _ in tables.keywords["name"]],
        "defaults": [ast.literal_eval(value) for value, _ in tables.defaults["name"]],
        "assigned": sorted(ast.literal_eval(value) for value, _ in tables.assigned["name"]),
        "in functions": sorted(ast.literal_eval(v) for v, functions in tables.assigned["name"] if functions),
    }


EXPECTED = {
    "keywords": ["decorated"],
    "defaults": ["default"],
    "assigned": ["class level", "local"],
    "in functions": ["local"],
}


def test_a_file_is_parsed_only_in_the_top_level_statements_that_hold_the_word(monkeypatch):
    sources = _parsed_sources(monkeypatch)
    facts = FileFacts.unparsed("config.py", CONFIG.encode())
    assert _names(facts) == EXPECTED
    assert sources and not any("unrelated" in source for source in sources)


def test_a_file_whose_top_level_lines_cannot_be_trusted_is_parsed_whole(monkeypatch):
    # A line inside a string looks like a statement of its own: cut there, it would bind `name`.
    text = CONFIG + 'TEMPLATE = """\nname = "inside a string"\n"""\n'
    sources = _parsed_sources(monkeypatch)
    assert _names(FileFacts.unparsed("config.py", text.encode())) == EXPECTED
    assert any("unrelated" in source for source in sources)


def test_a_name_written_in_other_letters_is_found_under_the_name_it_binds():
    # Python binds identifiers NFKC-normalized: full-width letters bind the ASCII name.
    facts = FileFacts.unparsed("wide.py", 'ｎａｍｅ = "wide"\nother = 1\n'.encode())
    assert [ast.literal_eval(value) for value, _ in facts.tables("name").assigned["name"]] == ["wide"]


def test_statements_of_a_tree_parsed_in_part_keep_their_nodes():
    # The flow compares the functions a tag sits in by identity: the tree's own nodes are used,
    # and the lines it left out (a definition deferred by a sites-only parse) are parsed apart.
    full = ast.parse(CONFIG)
    kept = [s for s in full.body if not (isinstance(s, ast.FunctionDef) and s.name == "first")]
    facts = FileFacts("config.py", SourceModule("config.py", CONFIG, ast.Module(body=kept, type_ignores=[])))
    config = next(s for s in kept if isinstance(s, ast.ClassDef))
    module_level = [value for value, functions in facts.tables("name").assigned["name"] if not functions]
    assert module_level == [config.body[0].value]
    assert _names(facts) == EXPECTED
