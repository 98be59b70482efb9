"""The one builder of workspace edits, for every feature's code actions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.server.documents import path_to_uri

if TYPE_CHECKING:
    from jax_lsp.core.findings import Edit
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer


def workspace_edit(
    ls: JaxLanguageServer, edits_by_uri: dict[str, list[types.TextEdit]]
) -> types.WorkspaceEdit:
    """The edits of each URI: as `documentChanges` with the version of each open buffer (the
    client refuses them once the buffer has changed) where the client takes them, else as
    `changes`."""
    if ls.client_support.document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=doc.version if (doc := ls.document(uri)) else None
                    ),
                    edits=list(edits),
                )
                for uri, edits in edits_by_uri.items()
            ]
        )
    return types.WorkspaceEdit(changes={uri: list(edits) for uri, edits in edits_by_uri.items()})


def edits_in_workspace(
    ls: JaxLanguageServer, edits: Sequence[Edit], place: Place | None = None
) -> types.WorkspaceEdit:
    """``edits`` (spans of code points) as one workspace edit: in ``place``'s buffer where they
    edit its file, else in their file as the server holds it."""
    by_uri: dict[str, list[types.TextEdit]] = {}
    for edit in edits:
        if place is not None and Path(edit.path) in (place.file, place.key):
            uri, lsp_range = place.uri, place.range(edit.span)
        else:
            uri = path_to_uri(edit.path)
            lsp_range = ls.to_lsp_range(uri, edit.span)
        by_uri.setdefault(uri, []).append(types.TextEdit(range=lsp_range, new_text=edit.new_text))
    return workspace_edit(ls, by_uri)
