"""Whole words in bytes (core.text.words): what the regular expression of one finds."""

from __future__ import annotations

import re

from jax_lsp.core.text.words import has_word, word_starts


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
        assert has_word(word.encode(), data) == (pattern.search(data) is not None), data
        for start in range(len(data)):  # the bytes before start are looked at; end ends a word
            for end in {min(start + len(word), len(data)), min(start + len(word) + 1, len(data)), len(data)}:
                expected = pattern.search(data, start, end) is not None
                assert has_word(word.encode(), data, start, end) == expected, (data, start, end)
                found = [m.start() for m in pattern.finditer(data, start, end)]
                assert list(word_starts(word.encode(), data, start, end)) == found, (data, start, end)
