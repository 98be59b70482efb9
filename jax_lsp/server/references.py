"""Find references on a checkpoint name string: every `checkpoint_name` tag that carries it
(with `includeDeclaration`) and every name string a policy factory is given with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core import name_help
from jax_lsp.server.diagnostics import log

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: JaxLanguageServer, params: types.ReferenceParams) -> list[types.Location] | None:
        uri = params.text_document.uri
        place = await ls.core_place(uri, params.position)
        if place is None:
            return None
        try:
            places = await ls.run_core(
                name_help.references, ls.core, *place, params.context.include_declaration
            )
            return [ls.location(p.path, p.span) for p in places] or None
        except Exception:
            log.exception("References at %s:%d failed", uri, params.position.line)
            return None
