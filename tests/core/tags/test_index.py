"""The names index's word search over many files at once."""

from __future__ import annotations

import re

from jax_lsp.core.tags.index import Corpus, _has_word


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


def test_a_whole_word_is_what_the_regular_expression_of_one_finds():
    texts = [
        b"checkpoint_names = 1\ncheckpoint_name(x, 'a')",  # the first find is inside a longer word
        b"my_checkpoint_name",
        b"\xc3\xa9checkpoint_name\xc3\xa9",  # a non-ASCII letter's bytes are no word's, as for `\w`
        b"checkpoint_name",
        b"checkpoint_name2",
        b"",
    ]
    word = "checkpoint_name"
    pattern = re.compile(rb"(?<!\w)" + re.escape(word.encode()) + rb"(?!\w)")
    for data in texts:
        assert _has_word(word, data) == (pattern.search(data) is not None), data
        for start in range(len(data)):  # the bytes before start are looked at; end ends a word
            for end in {min(start + len(word), len(data)), min(start + len(word) + 1, len(data)), len(data)}:
                expected = pattern.search(data, start, end) is not None
                assert _has_word(word, data, start, end) == expected, (data, start, end)
