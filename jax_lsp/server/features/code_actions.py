"""Code actions, each carrying its edit: the rule's fix, "Disable ... for this line", fix-all.

The fix's edits travel in the diagnostic's ``data`` (with the buffer version they belong to),
so no `codeAction/resolve` is needed and Emacs eglot and old Neovim work too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core import Finding
from jax_lsp.core.findings import Span
from jax_lsp.engine import Workspace
from jax_lsp.engine.fixes import Findings, TextBuffer, fix_until_stable
from jax_lsp.engine.selection import NOQA_COMMENT
from jax_lsp.server.diagnostic_data import DiagnosticData
from jax_lsp.server.diagnostics import (
    FIXING_SOURCES,
    SELECTED_SOURCES,
    diagnostic_data,
    shown,
    to_diagnostic,
)
from jax_lsp.server.documents import split_lines
from jax_lsp.server.edits import workspace_edit
from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from jax_lsp.server.documents import LspTextDocument
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer

FIX_ALL = "source.fixAll.jax-lsp"
KINDS = [types.CodeActionKind.QuickFix, FIX_ALL]


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """LSP kinds are hierarchical: asking for "source" includes "source.fixAll.jax-lsp"."""
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def fix_actions(
    ls: JaxLanguageServer, diagnostic: types.Diagnostic, data: DiagnosticData
) -> list[types.CodeAction]:
    actions = []
    for fix in data.fixes:
        edits: dict[str, list[types.TextEdit]] = {}
        for edit in fix.edits:
            edits.setdefault(edit.uri, []).append(types.TextEdit(range=edit.range, new_text=edit.new_text))
        actions.append(
            types.CodeAction(
                title=f"jax-lsp ({diagnostic.code}): {fix.title}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=fix.safe or None,
                edit=workspace_edit(ls, edits),
            )
        )
    return actions


def noqa_action(ls: JaxLanguageServer, place: Place, diagnostic: types.Diagnostic) -> types.CodeAction | None:
    line_number = diagnostic.range.start.line
    if line_number >= len(place.lines) or diagnostic.code is None:
        return None
    line = place.lines[line_number]
    content = line.rstrip("\r\n")
    code = str(diagnostic.code)
    match = re.search(NOQA_COMMENT, content)
    if match is None:
        at, new_text = len(content), f"  # noqa: {code}"
    elif match.group("codes"):
        at, new_text = match.end("codes"), f", {code}"
    else:
        return None  # a bare noqa comment silences the whole line already
    position = place.range(Span.of(line_number, at, line_number, at))
    return types.CodeAction(
        title=f"Disable {code} for this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=workspace_edit(ls, {place.uri: [types.TextEdit(range=position, new_text=new_text)]}),
    )


def fixed_text(ws: Workspace, path: str, text: str, findings: list[Finding]) -> str:
    """Every safe fix of one buffer whose edits stay in it, by the engine's fix loop, checked
    with the server's workspace (its roots, index and open buffers), as `check --fix` is.

    The workspace is given back the buffer's text as it held it: the editor may not apply the
    action, and an applied one comes back as a change of the buffer."""
    held = ws.buffer(path)
    buffer = TextBuffer(text)

    def recheck() -> tuple[Findings, list[str]]:
        return {path: [f for f in ws.check_file(path) if shown(f)]}, []

    try:
        run = fix_until_stable(ws, {path: findings}, [], recheck, lambda p: buffer if p == path else None)
    finally:
        if held is None:
            ws.close_document(path)
        else:
            ws.set_document(path, held)
    for error in run.errors:
        log.warning("Fix-all of %s: %s", path, error)
    return buffer.text


def whole_document_edit(ls: JaxLanguageServer, doc: LspTextDocument, new_text: str) -> types.TextEdit:
    """One edit covering the changed lines only, so the editor keeps folds and cursor elsewhere."""
    old, new = list(doc.lines), split_lines(new_text)
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    replaced = types.Range(
        start=types.Position(line=prefix, character=0),
        end=types.Position(line=len(old) - suffix, character=0),
    )
    return types.TextEdit(range=replaced, new_text="".join(new[prefix : len(new) - suffix]))


async def fix_all_action(ls: JaxLanguageServer, place: Place) -> types.CodeAction | None:
    doc, analysis = place.document, await ls.built_analysis()
    if doc is None or analysis is None:
        return None
    version, text = doc.version, doc.source
    # the features' findings too (the advisor's JAX191: a safe fix drops one name, which the
    # agent traced alone; the recheck holds the rules' only, so one such drop a fix-all)
    findings = [*await ls.checker.findings(place.uri), *ls.features.findings(place)]
    if not any(f.applicable_fix() for f in findings):
        return None
    new_text = await ls.run_analysis(fixed_text, analysis, str(place.key), text, findings)
    current = ls.document(place.uri)
    if current is None or current.version != version or new_text == text:
        return None
    return types.CodeAction(
        title="jax-lsp: Fix all safe fixes",
        kind=FIX_ALL,
        edit=workspace_edit(ls, {current.uri: [whole_document_edit(ls, current, new_text)]}),
    )


async def data_of(ls: JaxLanguageServer, place: Place, diagnostic: types.Diagnostic) -> DiagnosticData | None:
    """The fixes of a diagnostic for the buffer's current text, or None if it has none.

    A diagnostic of an older version of the text (the user was quicker than the re-check), or
    one whose ``data`` the client dropped, gets the fixes of the current finding with the same
    code and range: never edits computed for another text."""
    data = DiagnosticData.read(ls.converter, diagnostic.data)
    if data is not None and data.version == place.version:
        return data
    log.debug(
        "A code action for %s %s of version %s; the buffer is at version %s",
        diagnostic.code,
        place.uri,
        data.version if data is not None else None,
        place.version,
    )
    for finding in [*await ls.checker.findings(place.uri), *ls.features.findings(place)]:
        if finding.code == diagnostic.code and place.range(finding.span) == diagnostic.range:
            return diagnostic_data(ls, place, finding, place.version)
    return None


def _touches(a: types.Range, b: types.Range) -> bool:
    key = lambda p: (p.line, p.character)  # noqa: E731
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


async def diagnostics_in_request(
    ls: JaxLanguageServer, place: Place, params: types.CodeActionParams
) -> list[types.Diagnostic]:
    """Ours among the request's diagnostics; when it names none (eglot at an empty region),
    the findings of the latest check that touch the requested range."""
    ours = [d for d in params.context.diagnostics if d.source in SELECTED_SOURCES]
    if ours:
        return ours
    findings = await ls.checker.findings(place.uri)
    diagnostics = [to_diagnostic(ls, place, f, place.version) for f in findings]
    return [d for d in diagnostics if _touches(d.range, params.range)]


def register(server: JaxLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=False),
    )
    async def code_action(
        ls: JaxLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        place = ls.place(params.text_document.uri, params.range.start)
        if place is None or place.document is None:
            return None
        only = params.context.only
        actions: list[types.CodeAction] = []
        try:
            if wanted(types.CodeActionKind.QuickFix, only):
                for diagnostic in await diagnostics_in_request(ls, place, params):
                    if diagnostic.source in FIXING_SOURCES:  # the trace's carry no fixes
                        data = await data_of(ls, place, diagnostic)
                        if data is None:  # no finding of the current text
                            continue
                        actions += fix_actions(ls, diagnostic, data)
                    if (action := noqa_action(ls, place, diagnostic)) is not None:
                        actions.append(action)
            if wanted(FIX_ALL, only) and (action := await fix_all_action(ls, place)) is not None:
                actions.append(action)
        except Exception:
            log.exception("Code actions for %s failed", place.uri)
        actions += await ls.features.code_actions(place, params)  # each feature's failure is its own
        return actions or None
