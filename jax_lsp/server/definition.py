"""Go to definition on a checkpoint name string: the `checkpoint_name` tags that carry it.
Anywhere else: no answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core import name_help
from jax_lsp.server.diagnostics import log

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(
        ls: JaxLanguageServer, params: types.DefinitionParams
    ) -> list[types.Location] | None:
        uri = params.text_document.uri
        place = await ls.core_place(uri, params.position)
        if place is None:
            return None
        try:
            places = await ls.run_core(name_help.definitions, ls.core, *place)
            return [ls.location(p.path, p.span) for p in places] or None
        except Exception:
            log.exception("Definition at %s:%d failed", uri, params.position.line)
            return None
