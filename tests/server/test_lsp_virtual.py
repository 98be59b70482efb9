"""Buffers that are no file: `untitled:` buffers and notebook cells are checked as in-memory text."""

from __future__ import annotations

import pytest
from lsp_harness import position_of, start_session
from lsprotocol import types

UNTITLED = "untitled:Untitled-1"

POLICY = '''import jax


def save_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True


g = jax.checkpoint(lambda y: y * 2, policy=save_dots)
'''

POLICIES = '''def offload_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
'''

USES_POLICIES = '''import jax

from policies import offload_dots

g = jax.checkpoint(lambda y: y * 2, policy=offload_dots)
'''


def files_under(root) -> dict:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def uris_of(action: types.CodeAction) -> set[str]:
    if action.edit.document_changes:
        return {change.text_document.uri for change in action.edit.document_changes}
    return set(action.edit.changes)


@pytest.mark.parametrize("profile_name", ["vscode", "neovim"])
async def test_an_untitled_buffer_gets_the_diagnostics_fixes_and_hover_of_a_file(tmp_path, profile_name):
    async with start_session(profile_name, tmp_path) as lsp:
        as_file = lsp.open("model.py", POLICY)
        expected = [(d.code, d.range, d.message) for d in await lsp.diagnostics(as_file)]
        assert [code for code, _, _ in expected] == ["JAX101"]
        lsp.close(as_file)
        before = files_under(tmp_path)

        uri = lsp.open_uri(UNTITLED, POLICY)
        diagnostics = await lsp.diagnostics(uri)
        assert [(d.code, d.range, d.message) for d in diagnostics] == expected

        at = position_of(POLICY, "save_dots", lsp.encoding, 1)
        hover = await lsp.client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), at))
        assert "save_dots" in hover.contents.value and "None" in hover.contents.value

        actions = await lsp.code_actions(uri, diagnostics)
        titles = [a.title for a in actions]
        assert "Disable JAX101 for this line" in titles
        assert all(uris_of(a) == {uri} for a in actions), [(a.title, uris_of(a)) for a in actions]
        [fix] = [a for a in actions if a.title.startswith("jax-lsp (JAX101): ")]
        lsp.apply(fix, uri)
        assert await lsp.diagnostics(uri) == []

        lsp.replace_all(uri, POLICY)
        assert len(await lsp.diagnostics(uri)) == 1
        [fix_all] = await lsp.code_actions(uri, [], only=["source.fixAll.jax-lsp"])
        assert uris_of(fix_all) == {uri}
        lsp.apply(fix_all, uri)
        assert await lsp.diagnostics(uri) == []
        assert files_under(tmp_path) == before  # nothing was written for the buffer


async def test_an_untitled_buffer_imports_from_the_workspace_and_leaves_the_index_as_it_was(profile, tmp_path):
    (tmp_path / "policies.py").write_text(POLICIES)
    async with start_session(profile, tmp_path) as lsp:
        policies = lsp.open("policies.py")
        assert await lsp.diagnostics(policies) == []
        uri = lsp.open_uri(UNTITLED, USES_POLICIES)
        # The policy is found through the workspace root; its finding lies in policies.py and
        # points back to the buffer by its own URI.
        [diagnostic] = await lsp.eventually(policies, lambda d: len(d) == 1)
        assert diagnostic.code == "JAX101"
        assert [r.location.uri for r in diagnostic.related_information] == [uri]
        assert diagnostic.related_information[0].location.range.start.line == 4
        assert await lsp.diagnostics(uri) == []
        lsp.close(uri)
        await lsp.eventually(policies, lambda d: d == [])


async def test_a_notebook_cell_is_checked_as_its_own_module(tmp_path):
    notebook = tmp_path / "train.ipynb"
    cell = f"vscode-notebook-cell:{notebook.as_posix()}#W0sZmlsZQ%3D%3D"
    other_cell = f"vscode-notebook-cell:{notebook.as_posix()}#W1sZmlsZQ%3D%3D"
    async with start_session("vscode", tmp_path) as lsp:
        uri = lsp.open_uri(cell, POLICY)
        [diagnostic] = await lsp.diagnostics(uri)
        assert diagnostic.code == "JAX101"
        assert diagnostic.range.start == position_of(POLICY, "save_dots", lsp.encoding)
        [fix] = [a for a in await lsp.code_actions(uri, [diagnostic]) if a.title.startswith("jax-lsp (JAX101): ")]
        assert uris_of(fix) == {cell}
        # Another cell that only uses a name defined in this one sees no definition of it.
        other = lsp.open_uri(other_cell, "import jax\n\nh = jax.checkpoint(abs, policy=save_dots)\n")
        assert await lsp.diagnostics(other) == []
        assert [d.code for d in await lsp.diagnostics(uri)] == ["JAX101"]
    assert not notebook.exists()
