"""The policy advisor in the editor: a code lens per site, inlay hints on the lines that make
saved residuals, a hover, "Compare policies" (Markdown and a chart), the quick fix "Use the
suggested policy", the quick fix "Write a policy for B" (`jax-lsp.writePolicy`), JAX191 on
names that change nothing.

What to show and what to suggest is decided free of LSP types (`advised`: the advice kept per
site and followed through edits; `shown`: lens, hover and hints; `suggested`: the suggestion, its
quick fix and JAX191; `text` and `words`: the buffer's text and the sentences); `feature` is the
LSP adapter over them, given the trace's service (`writing`: its part for the written policy's
quick fix); `register` wires it into the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.server.features.advisor import shown
from jax_lsp.server.features.advisor.feature import AdvisorFeature
from jax_lsp.server.features.trace import TraceFeature
from jax_lsp.server.logs import log
from jax_lsp.trace.service import TraceService

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer


def register(server: JaxLanguageServer) -> None:
    """Add the advisor, on the trace feature's service (one warm agent for both) where the
    trace is registered, else on a service of its own."""
    trace = server.features.find(TraceFeature)
    if trace is not None:
        feature = AdvisorFeature(server, trace.service)
    else:
        feature = AdvisorFeature(server, TraceService(), owns_service=True)
    server.add_feature(feature)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    async def inlay_hint(ls: JaxLanguageServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        try:
            place = ls.place(params.text_document.uri)
            return await feature.inlay_hints(place, params.range) if place is not None else []
        except Exception:
            log.exception("Inlay hints for %s failed", params.text_document.uri)
            return []

    @server.command(shown.ADVISE)
    async def advise_policy(ls, *arguments):  # pygls resolves annotations here: keep none
        return await feature.advise_command(*arguments)

    @server.command(shown.COMPARE)
    async def compare_policies(ls, *arguments):
        return await feature.compare_command(*arguments)

    @server.command(shown.RUN)
    async def run_policies(ls, *arguments):
        return await feature.run_command(*arguments)

    @server.command(shown.WRITE)
    async def write_policy(ls, *arguments):
        return await feature.write_command(*arguments)
