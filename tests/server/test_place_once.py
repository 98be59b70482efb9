"""A keystroke's `Place` is resolved once and carried through the diagnostic path (issue 49,
item 7): `sync.did_change` resolves it, the checker checks and publishes with it, and every
diagnostic's range is made from it, not from a lookup of the document per range.

The server runs in this process (tests/server/test_bounded_state.py's `InProcessServer`), so
that its calls can be counted; its messages are real JSON-RPC, its analysis the real one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from jax_lsp.server.server import JaxLanguageServer
from tests.server.test_bounded_state import InProcessServer

SITE = """

def f{n}(x):
    return jax.checkpoint(lambda y: y, policy=jax.checkpoint_policies.save_only_these_names)(x)
"""


def _module(sites: int) -> str:
    return "import jax\n" + "".join(SITE.format(n=n) for n in range(sites))


class Counted:
    """Counts the calls of a bound method of the server, passing them on."""

    def __init__(self, method):
        self.method, self.calls = method, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.method(*args, **kwargs)


async def _published(lsp: InProcessServer, uri: str, version: int) -> list:
    for _ in range(1000):
        for message in reversed(lsp.sent.messages):
            params = message.get("params") or {}
            if message.get("method") == "textDocument/publishDiagnostics" and params.get("uri") == uri:
                if params.get("version") == version:
                    return params["diagnostics"]
                break
        await asyncio.sleep(0.01)
    raise AssertionError(f"no diagnostics for version {version}")


async def _lookups_of_one_keystroke(tmp_path: Path, sites: int) -> tuple[int, int, int]:
    """(places resolved, documents looked up, diagnostics) from one didChange of a buffer
    holding ``sites`` findings to its published diagnostics."""
    tmp_path.mkdir()
    lsp = InProcessServer(tmp_path)
    server: JaxLanguageServer = lsp.server
    uri = (tmp_path / f"model{sites}.py").as_uri()
    text = _module(sites)
    try:
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        lsp.notify("textDocument/didOpen", {"textDocument": item})
        assert len(await _published(lsp, uri, 1)) == sites
        place, document = Counted(server.place), Counted(server.document)
        server.place, server.document = place, document  # type: ignore[method-assign]
        end = {"line": 0, "character": 0}
        change = {"range": {"start": end, "end": end}, "text": "#\n"}
        lsp.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]}
        )
        diagnostics = await _published(lsp, uri, 2)
        return place.calls, document.calls, len(diagnostics)
    finally:
        lsp.stop()


async def test_a_keystroke_resolves_its_place_once_and_no_document_per_diagnostic(tmp_path: Path):
    places, documents, shown = await _lookups_of_one_keystroke(tmp_path / "one", 1)
    assert (places, shown) == (1, 1)
    many_places, many_documents, many_shown = await _lookups_of_one_keystroke(tmp_path / "many", 12)
    assert (many_places, many_shown) == (1, 12)
    assert many_documents == documents  # not one more per diagnostic (nor per fix's range)
