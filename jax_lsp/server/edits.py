"""The one builder of workspace edits, for every feature's code actions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
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
