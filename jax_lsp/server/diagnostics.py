"""Findings -> LSP diagnostics: conversion, and the per-(source, uri) store.

Push clients get `textDocument/publishDiagnostics`; clients that pull (and can be told to
pull again with `workspace/diagnostic/refresh`) get `textDocument/diagnostic` instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from jax_lsp.core.codes import Family, doc_url, family_of
from jax_lsp.core.findings import Finding, Severity, Span
from jax_lsp.engine import selection
from jax_lsp.server import notebooks
from jax_lsp.server.diagnostic_data import DiagnosticData, FixData, FixEdit
from jax_lsp.server.documents import path_to_uri

if TYPE_CHECKING:
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer


SOURCE = "jax-lsp"
ADVISE_SOURCE = "jax-lsp advise"
TRACE_SOURCE = "jax-lsp trace"
# The sources whose diagnostics carry their fixes in `data` (`DiagnosticData`).
FIXING_SOURCES = (SOURCE, ADVISE_SOURCE)
# The sources whose coded diagnostics the noqa comment hides (`engine.selection`).
SELECTED_SOURCES = (*FIXING_SOURCES, TRACE_SOURCE)
LSP_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
}


def shown(finding: Finding) -> bool:
    # Syntax and encoding problems are shown by the user's Python server already.
    return family_of(finding.code) is not Family.FILE


def code_description(code: str | None) -> types.CodeDescription | None:
    """The link to the code's doc page, for every code of the registry."""
    url = doc_url(code) if code else None
    return types.CodeDescription(href=url) if url else None


def diagnostic_data(
    server: JaxLanguageServer, place: Place, finding: Finding, version: int | None
) -> DiagnosticData:
    """The fixes of ``finding``, shown in ``place``'s buffer at ``version``, with their edits in
    LSP ranges (the buffer's through its place, another file's through the server)."""

    def edit_range(path: str, span: Span) -> tuple[str, types.Range]:
        if path == finding.path:
            return place.uri, place.range(span)
        uri = path_to_uri(path)
        return uri, server.to_lsp_range(uri, span)

    return DiagnosticData(
        version,
        [
            FixData(
                fix.title,
                fix.safe,
                [FixEdit(*edit_range(edit.path, edit.span), edit.new_text) for edit in fix.edits],
            )
            for fix in finding.fixes
        ],
    )


def to_diagnostic(
    server: JaxLanguageServer,
    place: Place,
    finding: Finding,
    version: int | None,
    source: str = SOURCE,
    data: Any = None,
) -> types.Diagnostic:
    """``finding`` shown in ``place``'s buffer (resolved once for all its diagnostics): with its
    fixes for buffer version ``version`` as its ``data`` (or ``data``, a feature's own), and
    where its policy is used as its related information."""
    related = []
    for path, span in finding.related:
        related_uri, span = notebooks.place(server, path, span)
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=related_uri, range=server.to_lsp_range(related_uri, span)),
                message="used as a remat policy here",
            )
        )
    if data is None and source in FIXING_SOURCES:
        data = diagnostic_data(server, place, finding, version)
    return note_diagnostic(
        server,
        place,
        finding.span,
        finding.severity,
        finding.message,
        code=finding.code,
        source=source,
        related=related,
        data=data,
    )


def note_diagnostic(
    server: JaxLanguageServer,
    place: Place,
    span: Span,
    severity: Severity,
    message: str,
    *,
    code: str | None,
    source: str,
    related: list[types.DiagnosticRelatedInformation] | None = None,
    data: Any = None,
) -> types.Diagnostic:
    """The one place a diagnostic is built: a finding's (`to_diagnostic`), or a note without a
    code (what a trace decided), in ``place``'s buffer."""
    return types.Diagnostic(
        range=place.range(span),
        severity=LSP_SEVERITY[severity],
        code=code,
        code_description=code_description(code),
        source=source,
        message=message,
        related_information=related or None,
        data=server.converter.unstructure(data) if data is not None else None,
    )


def admitted(server: JaxLanguageServer, findings: Iterable[Finding]) -> list[Finding]:
    """The findings of a feature (the trace's, the advisor's) that the user sees: the engine's
    selection (`engine.selection.admitted`) under the analysis' settings, each line as the
    open buffer has it, else the file on disk."""

    def line_text(path: str, line: int) -> str:
        lines = server.lines_of(path_to_uri(path))
        return lines[line].rstrip("\r\n") if 0 <= line < len(lines) else ""

    return selection.admitted(findings, server.settings.core, line_text)


class DiagnosticStore:
    """Diagnostics per (source, uri), like esbonio: the static pass and the trace own theirs."""

    def __init__(self, server: JaxLanguageServer) -> None:
        self._server = server
        self._items: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self._versions: dict[str, int | None] = {}
        self._refresh_pending = False

    def union(self, uri: str) -> list[types.Diagnostic]:
        return [d for per_uri in self._items.values() for d in per_uri.get(uri, [])]

    def set(
        self,
        source: str,
        uri: str,
        diagnostics: list[types.Diagnostic],
        version: int | None = None,
        announce: bool = True,
    ) -> None:
        self._items.setdefault(source, {})[uri] = list(diagnostics)
        if version is not None:
            self._versions[uri] = version
        if announce:
            self._announce(uri)

    def clear(self, uri: str) -> None:
        for per_uri in self._items.values():
            per_uri.pop(uri, None)
        self._versions.pop(uri, None)
        if not self._server.pull_diagnostics:
            self._push(uri)

    def _announce(self, uri: str) -> None:
        if self._server.pull_diagnostics:
            self.request_refresh()
        else:
            self._push(uri)

    def _push(self, uri: str) -> None:
        self._server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=self.union(uri), version=self._versions.get(uri)
            )
        )

    def request_refresh(self) -> None:
        """Ask a pull client to pull again; several requests in a row make one refresh."""
        if self._refresh_pending:
            return
        self._refresh_pending = True

        def send() -> None:
            self._refresh_pending = False
            if not self._server.shutting_down:
                self._server.workspace_diagnostic_refresh(None)

        asyncio.get_running_loop().call_later(0.05, send)


async def pull(
    ls: JaxLanguageServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    """textDocument/diagnostic, registered at initialize for the clients that pull."""
    uri = params.text_document.uri
    await ls.checker.findings(uri)
    items = ls.diagnostics.union(uri)
    # The id is a digest of the report itself: equal ids can only mean equal diagnostics.
    result_id = hashlib.blake2b(
        json.dumps(ls.converter.unstructure(items), sort_keys=True).encode(), digest_size=12
    ).hexdigest()
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)
