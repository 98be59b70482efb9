"""The names index's word search over many files at once."""

from __future__ import annotations

from jax_lsp.core.tags.index import Corpus


def test_a_word_is_found_whole_in_each_file_that_holds_it_in_order():
    corpus = Corpus(
        ["a.py", "b.py", "c.py", "d.py", "e.py"],
        [
            b"x = residual_name",
            b"name_suffix = 1\nprefix_name = 2",
            b"",
            b"f(residual_name=3)",
            b"residual_name",
        ],
    )
    assert corpus.files_with("residual_name", limit=5) == ["a.py", "d.py", "e.py"]
    assert corpus.files_with("name", limit=5) == []  # only inside longer words
    assert corpus.files_with("residual_name", limit=2) is None  # too common to follow


def test_a_word_does_not_run_from_the_end_of_one_file_into_the_next():
    corpus = Corpus(["a.py", "b.py"], [b"x = tag", b"_name = 1"])
    assert corpus.files_with("tag_name", limit=5) == []
    assert corpus.files_with("tag", limit=5) == ["a.py"]
    assert corpus.files_with("_name", limit=5) == ["b.py"]
