"""Notebooks synced as notebook documents: their Python code cells are checked as one module.

The cells are joined in order as the CLI joins a notebook file's (``jax_lsp.core.notebooks.notebook``:
each ending with a line break, IPython syntax made opaque), so a policy defined in one cell
and used in a later one is found. Findings, fix edits and related places are moved between the
joined text and the cell they lie in; one that crosses cells is dropped. A cell sent only as a
text document (no notebook sync) is checked on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core.findings import Finding, Fix, Span
from jax_lsp.core.notebooks.notebook import Layout, join_cells
from jax_lsp.server.documents import analysis_key, close_in_analysis, path_to_uri

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer

SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook="*", cells=[types.NotebookCellLanguage(language="python")]
        )
    ]
)


@dataclass(frozen=True)
class JoinedNotebook:
    uri: str
    path: str  # the analysis' key for the joined text
    layout: Layout[str]  # keyed by cell URI

    @property
    def text(self) -> str:
        return self.layout.text

    @property
    def cells(self) -> tuple[tuple[str, int, int], ...]:
        """(cell uri, first line, line after its last)"""
        return self.layout.cells

    def line_of(self, cell_uri: str) -> int:
        return self.layout.first_line(cell_uri)

    def to_cell(self, span: Span) -> tuple[str, Span] | None:
        """The cell holding ``span`` and the span within it; None if it crosses cells."""
        return self.layout.to_cell(span)

    def in_cell(self, finding: Finding, cell_uri: str) -> Finding | None:
        """``finding`` (of the joined text) moved into ``cell_uri``, if it lies there."""
        placed = self.to_cell(finding.span)
        if placed is None or placed[0] != cell_uri:
            return None
        return finding.replace(
            path=str(analysis_key(cell_uri)),
            span=placed[1],
            fixes=tuple(fix for f in finding.fixes if (fix := self._fix(f)) is not None),
            related=tuple(self.place(path, span) for path, span in finding.related),
        )

    def _fix(self, fix: Fix) -> Fix | None:
        edits = []
        for edit in fix.edits:
            if edit.path != self.path:
                edits.append(edit)
                continue
            placed = self.layout.edit_to_cell(edit.span)
            if placed is None:  # across cells, or on a line of IPython syntax
                return None
            edits.append(edit.replace(path=str(analysis_key(placed[0])), span=placed[1]))
        return fix.replace(edits=tuple(edits))

    def place(self, path: str, span: Span) -> tuple[str, Span]:
        """A (path, span) of the joined text as the cell's; others as they are."""
        placed = self.to_cell(span) if path == self.path else None
        return (str(analysis_key(placed[0])), placed[1]) if placed else (path, span)


def joined(ls: JaxLanguageServer, cell_uri: str) -> JoinedNotebook | None:
    """The notebook ``cell_uri`` belongs to, joined; None for a buffer that is no synced cell."""
    notebook = ls.workspace.get_notebook_document(cell_uri=cell_uri)
    return join(ls, notebook) if notebook is not None else None


def join(ls: JaxLanguageServer, notebook: types.NotebookDocument) -> JoinedNotebook:
    cells = [
        (cell, doc.source) for cell in code_cells(ls, notebook) if (doc := ls.document(cell)) is not None
    ]
    return JoinedNotebook(notebook.uri, str(analysis_key(notebook.uri)), join_cells(cells))


def code_cells(ls: JaxLanguageServer, notebook: types.NotebookDocument) -> list[str]:
    return [
        cell.document
        for cell in notebook.cells
        if cell.kind == types.NotebookCellKind.Code and ls.document(cell.document) is not None
    ]


def cells_of(ls: JaxLanguageServer, uris: Iterable[str]) -> set[str]:
    """``uris`` with each notebook URI among them replaced by its Python cells."""
    found = set()
    for uri in uris:
        notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
        found.update(code_cells(ls, notebook) if notebook is not None else [uri])
    return found


def place(ls: JaxLanguageServer, path: str, span: Span) -> tuple[str, Span]:
    """The URI and span of an analysis (path, span), a notebook's joined text mapped to its cell."""
    uri = path_to_uri(path)
    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    if notebook is not None:
        path, span = join(ls, notebook).place(path, span)
    return path_to_uri(path), span


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: JaxLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
        for uri in cells_of(ls, [params.notebook_document.uri]):
            ls.checker.schedule(uri)  # as a buffer opening: the files its sites use follow

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: JaxLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
        cells = params.change.cells
        for closed in (cells.structure.did_close or []) if cells and cells.structure else []:
            ls.checker.cancel(closed.uri)
            ls.diagnostics.clear(closed.uri)
        # An edited cell's check re-checks the other cells; a new, moved or removed cell
        # changes the joined text under each of them.
        edited = {c.document.uri for c in (cells.text_content or [])} if cells else set()
        for uri in cells_of(ls, [params.notebook_document.uri]):
            if uri in edited:
                ls.checker.schedule(uri, debounce=True)
            elif cells and cells.structure:
                ls.checker.schedule(uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    async def did_close(ls: JaxLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
        for cell in params.cell_text_documents:
            ls.checker.cancel(cell.uri)
            ls.diagnostics.clear(cell.uri)
        if ls.analysis is not None:
            affected = await ls.run_analysis(
                close_in_analysis, ls.analysis, analysis_key(params.notebook_document.uri)
            )
            ls.checker.schedule_all(cells_of(ls, {path_to_uri(p) for p in affected}))
