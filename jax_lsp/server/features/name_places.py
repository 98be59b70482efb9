"""Go to definition and find references on a checkpoint name string.

Definition: the `checkpoint_name` tags that carry the name. References: every tag that carries
it (with `includeDeclaration`) and every name string a policy factory is given with it.
Anywhere else: no answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from jax_lsp.core.tags import editor_help, tags
from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer


async def _locations(
    ls: JaxLanguageServer,
    uri: str,
    position: types.Position,
    find: Callable[..., list[tags.Place]],
    *extra: Any,
) -> list[types.Location] | None:
    place = await ls.current_place(uri, position)
    analysed = place.in_analysis if place is not None else None
    if analysed is None or ls.analysis is None:
        return None
    try:
        places = await ls.run_analysis(find, ls.analysis, *analysed, *extra)
        return [ls.location(p.path, p.span) for p in places] or None
    except Exception:
        log.exception("%s at %s:%d failed", find.__name__, uri, position.line)
        return None


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(
        ls: JaxLanguageServer, params: types.DefinitionParams
    ) -> list[types.Location] | None:
        return await _locations(ls, params.text_document.uri, params.position, editor_help.definitions)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: JaxLanguageServer, params: types.ReferenceParams) -> list[types.Location] | None:
        uri, position, declaration = (
            params.text_document.uri,
            params.position,
            params.context.include_declaration,
        )
        return await _locations(ls, uri, position, editor_help.references, declaration)
