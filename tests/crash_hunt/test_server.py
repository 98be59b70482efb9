"""Crash hunt through the real server: generated packages of policy idioms over LSP traffic.

Each generated package is opened in one of two editors (its profile is drawn with it, so a
failure replays and shrinks under the same one). Each file is opened, its diagnostics awaited, hovered at every word's start, asked for code
actions, edited by its first quick fix and then by the fix-all action, and closed. The server
must answer all of it, log no error, stay up, and leave valid Python.
"""

from __future__ import annotations

import ast
import asyncio
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from jax_lsp.core.text.decoding import split_lines
from jax_lsp.server.features.code_actions import FIX_ALL
from tests.crash_hunt import idioms
from tests.crash_hunt.checks import hover_positions, hunt_settings
from tests.server.lsp_harness import TIMEOUT_S, BackgroundSession, Session, units

counter = itertools.count()


HUNTED_PROFILES = ("vscode", "neovim")


@pytest.fixture(scope="module")
def backgrounds(tmp_path_factory):
    """One server per profile for the whole hunt; each must log no error and be up at its end."""
    servers = {p: BackgroundSession(p, tmp_path_factory.mktemp(p)) for p in HUNTED_PROFILES}
    yield servers
    failures = {}
    for profile, server in servers.items():
        client = server.session.client
        errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
        alive = client._server is not None and client._server.returncode is None
        server.close()
        if errors or not alive:
            failures[profile] = (errors, alive)
    assert failures == {}


async def exercise(lsp: Session, uri: str, text: str) -> None:
    diagnostics = await lsp.diagnostics(uri)
    lines = split_lines(text)
    for line, column in hover_positions(text):
        position = types.Position(line, units(lines[line][:column], lsp.encoding))
        await asyncio.wait_for(
            lsp.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), position)
            ),
            TIMEOUT_S,
        )
    actions = await lsp.code_actions(uri, diagnostics)
    quick_fix = next((a for a in actions if a.kind == types.CodeActionKind.QuickFix and a.edit), None)
    if quick_fix is not None:
        lsp.apply(quick_fix, uri)
        diagnostics = await lsp.diagnostics(uri)
    fix_all = await lsp.code_actions(uri, diagnostics, only=[FIX_ALL])
    if fix_all and lsp.edits_for(fix_all[0], uri):
        lsp.apply(fix_all[0], uri)
        await lsp.diagnostics(uri)
    ast.parse(lsp.texts[uri])  # the fixes left valid Python


@hunt_settings(examples=8, cost=12)
@given(idioms.package(layouts=idioms.EDITOR_LAYOUTS), st.sampled_from(HUNTED_PROFILES))
def test_the_server_answers_generated_packages(backgrounds, files: dict[str, str], profile: str):
    background = backgrounds[profile]
    lsp = background.session
    folder = f"hunt_{next(counter)}"
    for name, text in files.items():
        lsp.write(f"{folder}/{name}", text)
    uris = {name: lsp.open(f"{folder}/{name}", text) for name, text in files.items()}
    for name, uri in uris.items():
        background.run(exercise(lsp, uri, files[name]), timeout=120)
    for uri in uris.values():
        lsp.close(uri)
    assert not [m.message for m in lsp.client.log_messages if m.type == types.MessageType.Error]
