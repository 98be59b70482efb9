"""Buffers opening, changing, saving and closing: keep the analysis current and re-check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.server.documents import close_in_analysis, path_to_uri
from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: JaxLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.document(params.text_document.uri) is not None:
            ls.checker.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: JaxLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        place = ls.place(params.text_document.uri)
        if place is not None and place.document is not None:
            ls.checker.schedule(place.uri, debounce=True, place=place)
            ls.features.did_change(place, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: JaxLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        # The analysis already has the buffer, which is what was saved: only the features care.
        place = ls.place(params.text_document.uri)
        if place is not None and place.document is not None:
            ls.features.did_save(place)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: JaxLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.checker.cancel(uri)
        ls.diagnostics.clear(uri)
        place = ls.place(uri)
        if place is None:
            return
        ls.features.did_close(place)
        if ls.analysis is None:
            return
        try:
            affected = await ls.run_analysis(close_in_analysis, ls.analysis, place.key)
        except Exception:
            log.exception("Closing %s failed", uri)
            return
        ls.checker.schedule_all({path_to_uri(p) for p in affected})
