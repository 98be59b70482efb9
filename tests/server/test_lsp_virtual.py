"""Buffers that are no file: `untitled:` buffers and notebook cells are checked as in-memory text."""

from __future__ import annotations

import pytest
from lsp_harness import apply_text_edits, position_of, start_session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

UNTITLED = "untitled:Untitled-1"

POLICY = """import jax


def save_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True


g = jax.checkpoint(lambda y: y * 2, policy=save_dots)
"""

POLICIES = """def offload_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
"""

USES_POLICIES = """import jax

from policies import offload_dots

g = jax.checkpoint(lambda y: y * 2, policy=offload_dots)
"""


def files_under(root) -> dict:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def uris_of(action: types.CodeAction) -> set[str]:
    if action.edit.document_changes:
        return {change.text_document.uri for change in action.edit.document_changes}
    return set(action.edit.changes)


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_an_untitled_buffer_gets_the_diagnostics_fixes_and_hover_of_a_file(tmp_path, server):
    async with server.in_folder(tmp_path) as lsp:
        as_file = lsp.open("model.py", POLICY)
        expected = [(d.code, d.range, d.message) for d in await lsp.diagnostics(as_file)]
        assert [code for code, _, _ in expected] == ["JAX101"]
        lsp.close(as_file)
        before = files_under(tmp_path)

        uri = lsp.open_uri(UNTITLED, POLICY)
        diagnostics = await lsp.diagnostics(uri)
        assert [(d.code, d.range, d.message) for d in diagnostics] == expected

        at = position_of(POLICY, "save_dots", lsp.encoding, 1)
        hover = await lsp.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), at)
        )
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


async def test_an_untitled_buffer_imports_from_the_workspace_and_leaves_the_index_as_it_was(server, tmp_path):
    (tmp_path / "policies.py").write_text(POLICIES)
    async with server.in_folder(tmp_path) as lsp:
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


async def test_a_cell_sent_without_its_notebook_is_checked_as_its_own_module(tmp_path):
    notebook = tmp_path / "train.ipynb"
    cell = f"vscode-notebook-cell:{notebook.as_posix()}#W0sZmlsZQ%3D%3D"
    other_cell = f"vscode-notebook-cell:{notebook.as_posix()}#W1sZmlsZQ%3D%3D"
    async with start_session("vscode", tmp_path) as lsp:
        uri = lsp.open_uri(cell, POLICY)
        [diagnostic] = await lsp.diagnostics(uri)
        assert diagnostic.code == "JAX101"
        assert diagnostic.range.start == position_of(POLICY, "save_dots", lsp.encoding)
        [fix] = [
            a for a in await lsp.code_actions(uri, [diagnostic]) if a.title.startswith("jax-lsp (JAX101): ")
        ]
        assert uris_of(fix) == {cell}
        # Another cell that only uses a name defined in this one sees no definition of it.
        other = lsp.open_uri(other_cell, "import jax\n\nh = jax.checkpoint(abs, policy=save_dots)\n")
        assert await lsp.diagnostics(other) == []
        assert [d.code for d in await lsp.diagnostics(uri)] == ["JAX101"]
    assert not notebook.exists()


DEFINES = """import jax


def save_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
"""
USES = "g = jax.checkpoint(lambda y: y * 2, policy=save_dots)\n"


def open_notebook(lsp, notebook_uri: str, cells: list[tuple[str, str]]) -> None:
    lsp.client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri) for uri, _ in cells
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
                for uri, text in cells
            ],
        )
    )


async def test_a_synced_notebook_is_checked_as_one_module_in_cell_order(tmp_path):
    notebook = (tmp_path / "train.ipynb").as_uri()
    cell = [
        f"vscode-notebook-cell:{(tmp_path / 'train.ipynb').as_posix()}#W{n}sZmlsZQ%3D%3D" for n in range(3)
    ]
    async with start_session("vscode", tmp_path) as lsp:
        # The policy is defined in the first cell and used in the third; a markdown-free middle
        # cell shifts the lines.
        open_notebook(lsp, notebook, [(cell[0], DEFINES), (cell[1], "x = 1"), (cell[2], USES)])
        [diagnostic] = await lsp.eventually(cell[0], lambda d: len(d) == 1)
        assert diagnostic.code == "JAX101"
        assert diagnostic.range.start == position_of(DEFINES, "save_dots", lsp.encoding)
        [related] = diagnostic.related_information
        assert related.location.uri == cell[2]
        assert related.location.range.start == position_of(USES, "save_dots", lsp.encoding)
        assert await lsp.diagnostics(cell[2]) == []

        [fix] = [
            a
            for a in await lsp.code_actions(cell[0], [diagnostic])
            if a.title.startswith("jax-lsp (JAX101): ")
        ]
        assert uris_of(fix) == {cell[0]}
        fixed = apply_text_edits(DEFINES, lsp.edits_for(fix, cell[0]), lsp.encoding)
        assert fixed == DEFINES.replace("return True\n", "return True\n    return False\n")

        at = position_of(USES, "save_dots", lsp.encoding)
        hover = await lsp.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(cell[2]), at)
        )
        assert "save_dots" in hover.contents.value and "None" in hover.contents.value
        assert hover.range.start == at

        # The third cell stops using the policy: the first cell's finding goes.
        start = position_of(USES, "save_dots", lsp.encoding)
        end = types.Position(start.line, start.character + len("save_dots"))
        lsp.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=notebook),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(uri=cell[2], version=2),
                                changes=[
                                    types.TextDocumentContentChangePartial(
                                        range=types.Range(start, end), text="None"
                                    )
                                ],
                            )
                        ]
                    )
                ),
            )
        )
        await lsp.eventually(cell[0], lambda d: d == [])


async def test_a_workspace_policy_used_in_a_notebook_points_to_the_cell_until_it_closes(tmp_path):
    (tmp_path / "policies.py").write_text(POLICIES)
    notebook = (tmp_path / "train.ipynb").as_uri()
    cells = [
        f"vscode-notebook-cell:{(tmp_path / 'train.ipynb').as_posix()}#W{n}sZmlsZQ%3D%3D" for n in range(2)
    ]
    async with start_session("vscode", tmp_path) as lsp:
        policies = lsp.open("policies.py")
        assert await lsp.diagnostics(policies) == []
        open_notebook(lsp, notebook, [(cells[0], "x = 1\n"), (cells[1], USES_POLICIES)])
        [diagnostic] = await lsp.eventually(policies, lambda d: len(d) == 1)
        [related] = diagnostic.related_information
        assert related.location.uri == cells[1]
        assert related.location.range.start == position_of(USES_POLICIES, "offload_dots)", lsp.encoding)
        lsp.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=notebook),
                cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in cells],
            )
        )
        await lsp.eventually(policies, lambda d: d == [])


async def test_removing_the_cell_that_uses_a_policy_clears_the_cell_that_defines_it(tmp_path):
    notebook = (tmp_path / "train.ipynb").as_uri()
    cells = [
        f"vscode-notebook-cell:{(tmp_path / 'train.ipynb').as_posix()}#W{n}sZmlsZQ%3D%3D" for n in range(2)
    ]
    async with start_session("vscode", tmp_path) as lsp:
        open_notebook(lsp, notebook, [(cells[0], DEFINES), (cells[1], USES)])
        await lsp.eventually(cells[0], lambda d: [x.code for x in d] == ["JAX101"])
        lsp.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=notebook),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        structure=types.NotebookDocumentCellChangeStructure(
                            array=types.NotebookCellArrayChange(start=1, delete_count=1, cells=[]),
                            did_close=[types.TextDocumentIdentifier(uri=cells[1])],
                        )
                    )
                ),
            )
        )
        await lsp.eventually(cells[0], lambda d: d == [])
