"""The encoding of a file's bytes is tokenize's, found without tokenize where the first two
lines declare UTF-8 or nothing (core.text.decoding)."""

from __future__ import annotations

import codecs
import io
import itertools
import subprocess
import sys
import tokenize
from collections.abc import Callable

from jax_lsp.core.text.decoding import _detect_encoding
from tests.cli.runner import REPO

LINES = [
    b"",
    b"\n",
    b"\r\n",
    b"#\n",
    b"#!/usr/bin/env python\n",
    b"import x\n",
    b"x = 'coding=utf-8'\n",
    b"# coding=utf-8\n",
    b"# coding=utf-8",
    b"# coding=utf-8\r\n",
    b"# -*- coding: utf-8 -*-\n",
    b"  # coding:  UTF_8\n",
    b"# vim: set fileencoding=utf-8 :\n",
    b"# coding=utf8\n",
    b"# coding=utf-8-sig\n",
    b"# coding=utf-8-variant\n",
    b"# coding=\n",
    b"# coding: latin-1\n",
    b"\x0c# coding=iso-8859-1\n",
    b"# coding=euc-jp\n",
    b"# coding=bogus\n",
    b"# \xc3\xa9 coding=utf-8\n",
    b"\xff\xfe# coding=utf-8\n",
]


def _tokenize(data: bytes) -> str:
    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def _found(detect: Callable[[bytes], str], data: bytes) -> str:
    try:
        return detect(data)
    except SyntaxError as exc:
        return f"SyntaxError: {exc}"


def test_every_head_gets_the_encoding_tokenize_finds() -> None:
    for bom, first, second in itertools.product((b"", codecs.BOM_UTF8), LINES, LINES):
        data = bom + first + second + b"# coding=latin-1\nx = 1\n"  # a third line is never read
        assert _found(_detect_encoding, data) == _found(_tokenize, data), data


def test_a_utf8_declaration_is_read_without_tokenize() -> None:
    code = "import sys; from jax_lsp.core.text.decoding import decode; print(decode(b'# coding=utf-8\\nx = 1\\n')[1], 'tokenize' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["utf-8", "False"]
