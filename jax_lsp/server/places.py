"""Where a request points, resolved once (`JaxLanguageServer.place`): the buffer, the analysis'
key for it, the position in code points and, for a synced notebook cell, its notebook joined.

Features get a `Place` and never turn a URI into a document, a path or a cell again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from jax_lsp.core.findings import Position, Span
from jax_lsp.server import positions
from jax_lsp.server.documents import LspTextDocument, file_lines, is_virtual
from jax_lsp.server.notebooks import JoinedNotebook


@dataclass(frozen=True)
class Place:
    uri: str
    key: Path  # the analysis' key for the buffer: its file, or a virtual key (`analysis_key`)
    document: LspTextDocument | None  # the open Python buffer; None once closed, or never opened
    notebook: JoinedNotebook | None  # the synced notebook the buffer is a cell of, joined
    codec: PositionCodec  # the position encoding the client negotiated
    position: Position | None = None  # the request's position in the buffer, in code points

    @property
    def file(self) -> Path | None:
        """The file behind a `file:` URI; None for a buffer that is no file (untitled:, a cell)."""
        return None if is_virtual(self.key) else self.key

    @property
    def version(self) -> int | None:
        """The open buffer's version; None for a closed one."""
        return self.document.version if self.document is not None else None

    @property
    def lines(self) -> Sequence[str]:
        """The buffer's lines, else those of the file on disk (a command on a closed file)."""
        return self.document.lines if self.document is not None else file_lines(self.file)

    @property
    def in_analysis(self) -> tuple[str, Position] | None:
        """The path of the text the analysis checks for an open buffer (a synced cell's is its
        notebook's joined text) and the request's position in it; None without either."""
        if self.document is None or self.position is None:
            return None
        if self.notebook is None:
            return str(self.key), self.position
        line = self.position.line + self.notebook.line_of(self.uri)
        return self.notebook.path, Position(line, self.position.column)

    def to_core(self, position: types.Position) -> Position:
        """A client position in this buffer, in code points."""
        return positions.to_core_position(self.lines, position, self.codec)

    def range(self, span: Span) -> types.Range:
        """A span of this buffer in the client's encoding."""
        return positions.to_lsp_range(self.lines, span, self.codec)
