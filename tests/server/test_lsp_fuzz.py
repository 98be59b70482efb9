"""Random incremental edits, sent as real didChange messages, never derail the server.

The client side is modelled here independently of the server: a flat text, LSP line breaks
(\\n, \\r\\n, \\r) and code units counted in the negotiated encoding.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_harness import BackgroundSession, units
from lsprotocol import types
from test_lsp_code_actions import POLICY

from jax_lsp.engine import analyze_text

LINE_BREAK = re.compile(r"\r\n|\r|\n")
CHARS = "abxy_ ():,.=\"'#\t\n\r\x0c\u2028é中文😀\\"
TOKENS = [
    "return",
    "return None",
    "def p(prim, *a, **k):",
    "if prim.name == 'x':",
    "    ",
    "\n    return True\n",
    "policy=",
    ")",
    "(",
    "None",
    "Offloadable",
]
# Appended by a last edit at the client's end of text: lands elsewhere if the server's text drifted.
SENTINEL = "\n\nimport jax\n\n\ndef sentinel(prim, *a, **k):\n    return\n\n\nsite = jax.checkpoint(abs, policy=sentinel)\n"
edit_text = st.one_of(st.text(alphabet=CHARS, max_size=6), st.sampled_from(TOKENS))


def lsp_position(text: str, offset: int, encoding: str) -> types.Position:
    line_start, line = 0, 0
    for match in LINE_BREAK.finditer(text, 0, offset):
        if match.end() > offset:  # inside a \r\n: callers never ask for that
            break
        line_start, line = match.end(), line + 1
    return types.Position(line=line, character=units(text[line_start:offset], encoding))


def lsp_range(text: str, span, encoding: str) -> types.Range:
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)

    def position(p):
        if p.line >= len(lines):
            return types.Position(line=len(lines), character=0)
        return types.Position(line=p.line, character=units(lines[p.line][: p.column], encoding))

    return types.Range(position(span.start), position(span.end))


def not_inside_crlf(text: str, offset: int) -> int:
    return (
        offset - 1 if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n" else offset
    )


@pytest.fixture(scope="module", params=["vscode", "neovim", "emacs"])
def background(request, tmp_path_factory):
    server = BackgroundSession(request.param, tmp_path_factory.mktemp(request.param))
    yield server
    server.close()


counter = iter(range(10**9))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_edits_end_with_the_diagnostics_of_a_fresh_check(background, data):
    lsp = background.session
    name = f"fuzz_{next(counter)}.py"
    uri = lsp.open(name, POLICY)
    text = POLICY
    texts = {1: text}
    edits = data.draw(
        st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 8), edit_text), min_size=1, max_size=25)
    )
    for at, delete, new in [*edits, (len(text) + 10**6, 0, SENTINEL)]:
        start = not_inside_crlf(text, min(at, len(text)))
        end = not_inside_crlf(text, min(len(text), start + delete))
        range_ = types.Range(lsp_position(text, start, lsp.encoding), lsp_position(text, end, lsp.encoding))
        text = text[:start] + new + text[end:]
        lsp.versions[uri] += 1
        lsp.texts[uri] = text
        texts[lsp.versions[uri]] = text
        lsp.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=lsp.versions[uri]),
                content_changes=[types.TextDocumentContentChangePartial(range=range_, text=new)],
            )
        )
    got = background.run(lsp.diagnostics(uri))
    lsp.close(uri)
    path = str(lsp.root / name)

    def expected(text: str) -> list:
        return [
            (f.code, lsp_range(text, f.span, lsp.encoding), f.message)
            for f in analyze_text(text, path)
            if not f.code.startswith("JAX0")
        ]

    assert [(d.code, d.range, d.message) for d in got] == expected(text)
    # Never stale: whatever was pushed on the way belongs to the version it names.
    for params in [p for p in lsp.history if p.uri == uri and p.diagnostics]:
        assert [(d.code, d.range, d.message) for d in params.diagnostics] == expected(texts[params.version])
    assert not [m for m in lsp.client.log_messages if m.type == types.MessageType.Error]
    assert not lsp.client.messages
