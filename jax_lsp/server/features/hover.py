"""Hover on a policy (at its `policy=` site or its `def`), on a checkpoint name string (where it
is tagged, which policies save, offload or exclude it), and on a code in a `# noqa` comment.

Anything else gets no answer: the user's Python server owns hovers in general.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.core.findings import Span
from jax_lsp.core.policies.describe import PolicyDescription
from jax_lsp.core.tags import editor_help
from jax_lsp.core.tags.editor_help import NameDescription
from jax_lsp.engine.selection import NOQA_COMMENT
from jax_lsp.server import notebooks
from jax_lsp.server.logs import log
from jax_lsp.server.registry import LanguageFeature

if TYPE_CHECKING:
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer

_CODE = re.compile(r"[A-Za-z]+[0-9]+")


def noqa_code_at(line: str, column: int) -> tuple[str, int, int] | None:
    """The rule code under ``column`` inside the line's `# noqa: ...` comment."""
    match = re.search(NOQA_COMMENT, line)
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


async def _describe(ls: JaxLanguageServer, place: Place) -> tuple[str | None, Span | None]:
    """The checkpoint name or the policy under the position, and the span (in the buffer) it covers."""
    analysed, analysis = place.in_analysis, ls.analysis
    if analysed is None or analysis is None:
        return None, None
    path, position = analysed
    description: NameDescription | PolicyDescription | None
    description = await ls.run_analysis(editor_help.describe, analysis, path, position)
    if description is None:
        description = await ls.run_analysis(analysis.describe_policy, path, position.line, position.column)
    if description is None:
        return None, None
    if description.span is None:
        return description.markdown(), None
    placed_uri, span = notebooks.place(ls, path, description.span)
    return description.markdown(), span if placed_uri == place.uri else None


class PolicyHover(LanguageFeature):
    async def hover(self, place: Place) -> types.Hover | None:
        doc, position = place.document, place.position
        if doc is None or position is None or self.server.analysis is None:
            return None
        if position.line >= len(doc.lines):
            return None
        span: Span | None
        try:
            found = noqa_code_at(doc.lines[position.line], position.column)
            if found is not None:
                code, start, end = found
                markdown = rule_hover(code)
                span = Span.of(position.line, start, position.line, end)
            else:
                markdown, span = await _describe(self.server, place)
        except Exception:
            log.exception("Hover at %s:%d failed", place.uri, position.line)
            return None
        if markdown is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
            range=place.range(span) if span is not None else None,
        )


def register(server: JaxLanguageServer) -> None:
    server.add_feature(PolicyHover(server))
