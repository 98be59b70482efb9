"""Hover on a policy (at its `policy=` site or its `def`), and on a code in a `# noqa` comment.

Anything else gets no answer: the user's Python server owns hovers in general.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core.analysis import NOQA_COMMENT
from jax_lsp.core.model import Span
from jax_lsp.server import notebooks
from jax_lsp.server.diagnostics import log
from jax_lsp.server.documents import core_path

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer

_CODE = re.compile(r"[A-Za-z]+[0-9]+")


def noqa_code_at(line: str, column: int) -> tuple[str, int, int] | None:
    """The rule code under ``column`` inside the line's `# noqa: ...` comment."""
    match = NOQA_COMMENT.search(line)
    if match is None or match.group("codes") is None:
        return None
    for code in _CODE.finditer(line, match.start("codes"), match.end("codes")):
        if code.start() <= column <= code.end():
            return code.group().upper(), code.start(), code.end()
    return None


def rule_hover(code: str) -> str | None:
    from jax_lsp.rules import get_rule

    rule = get_rule(code)
    return rule.docs() if rule is not None else None


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: JaxLanguageServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        doc, path = ls.document(uri), core_path(uri)
        if doc is None or path is None or ls.core is None:
            return None
        position = ls.to_core_position(uri, params.position)
        if position.line >= len(doc.lines):
            return None
        try:
            found = noqa_code_at(doc.lines[position.line], position.column)
            if found is not None:
                code, start, end = found
                markdown = rule_hover(code)
                span = Span.of(position.line, start, position.line, end)
            else:
                # A synced notebook cell is a part of its notebook's joined text.
                notebook = notebooks.joined(ls, uri)
                if notebook is not None:
                    path, first = notebook.path, notebook.line_of(uri)
                else:
                    first = 0
                description = await ls.run_core(ls.core.describe_policy, path, position.line + first, position.column)
                if description is None:
                    return None
                markdown, span = description.markdown(), description.span
                if notebook is not None and span is not None:
                    placed = notebook.to_cell(span)
                    span = placed[1] if placed is not None and placed[0] == uri else None
        except Exception:
            log.exception("Hover at %s:%d failed", uri, params.position.line)
            return None
        if markdown is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
            range=ls.to_lsp_range(uri, span) if span is not None else None,
        )
