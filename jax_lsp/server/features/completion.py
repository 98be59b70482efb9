"""Completion of checkpoint names inside the strings of `save_only_these_names(...)` and the
other factories of names (the names that `checkpoint_name` tags in reach), and of
`checkpoint_name(x, "...")` (those and the names policies give). Anywhere else: no answer,
the user's Python server completes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core.tags import editor_help
from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer

TRIGGERS = ['"', "'"]


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=TRIGGERS))
    async def completion(
        ls: JaxLanguageServer, params: types.CompletionParams
    ) -> types.CompletionList | None:
        uri = params.text_document.uri
        place = await ls.current_place(uri, params.position)
        analysed = place.in_analysis if place is not None else None
        if analysed is None or ls.analysis is None:
            return None
        try:
            found = await ls.run_analysis(editor_help.complete, ls.analysis, *analysed)
            if found is None:
                return None
            edit_range = ls.location(analysed[0], found.span).range
        except Exception:
            log.exception("Completion at %s:%d failed", uri, params.position.line)
            return None
        items = [
            types.CompletionItem(
                label=name,
                kind=types.CompletionItemKind.Constant,
                detail=detail,
                filter_text=name,
                text_edit=types.TextEdit(range=edit_range, new_text=name),
            )
            for name, detail in found.names
        ]
        return types.CompletionList(is_incomplete=False, items=items)
