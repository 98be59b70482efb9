"""What our diagnostics carry in `data`, as attrs classes the lsprotocol converter turns into
JSON (camelCase, as LSP's own types) and back.

A static diagnostic carries its fixes with the buffer version they were computed on, so code
actions are built from the request's diagnostics alone (no `codeAction/resolve`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from cattrs import Converter


@attrs.frozen
class FixEdit:
    uri: str
    range: types.Range
    new_text: str


@attrs.frozen
class FixData:
    title: str
    safe: bool
    edits: list[FixEdit]


@attrs.frozen
class DiagnosticData:
    """A static diagnostic's fixes, for version ``version`` of the buffer."""

    version: int | None
    fixes: list[FixData]

    @classmethod
    def read(cls, converter: Converter, data: Any) -> DiagnosticData | None:
        """The data a client sent back, or None where it dropped or changed it."""
        if data is None:
            return None
        try:
            return converter.structure(data, cls)
        except Exception as exc:
            log.debug("Diagnostic data that is not ours: %r (%s)", data, exc)
            return None


@attrs.frozen
class TraceData:
    """A trace diagnostic's: the static rule it confirms."""

    confirms: str
