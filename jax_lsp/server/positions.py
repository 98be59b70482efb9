"""Core positions (code points) <-> LSP positions (the negotiated UTF-8/16/32 code units)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from jax_lsp.core.findings import Position, Span


def to_lsp_position(lines: Sequence[str], position: Position, codec: PositionCodec) -> types.Position:
    if position.line >= len(lines):
        # The end of a file that ends with a line break, or a span past a shrunken buffer.
        return types.Position(line=len(lines), character=0)
    line = lines[position.line]
    return types.Position(line=position.line, character=codec.client_num_units(line[: position.column]))


def to_lsp_range(lines: Sequence[str], span: Span, codec: PositionCodec) -> types.Range:
    return types.Range(
        start=to_lsp_position(lines, span.start, codec), end=to_lsp_position(lines, span.end, codec)
    )


def to_core_position(lines: Sequence[str], position: types.Position, codec: PositionCodec) -> Position:
    """A client position; characters past the end of the line clamp to its end."""
    if position.line >= len(lines):
        return Position(len(lines), 0)
    line = lines[position.line].rstrip("\r\n")
    units = 0
    for column, char in enumerate(line):
        if units >= position.character:
            return Position(position.line, column)
        units += codec.impl.code_units_for_char(char)
    return Position(position.line, len(line))
