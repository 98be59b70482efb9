"""Jupyter notebooks (nbformat 4) as one Python module: their code cells joined in order.

A policy defined in one cell and used in another is found, as in a module. Each cell's text
ends with a line break in the joined text (one is added where the cell has none), so every
joined line belongs to one cell; IPython syntax is made opaque line by line (see ``ipython``),
so positions within a cell are the cell's own.

The file is read with the position of every cell's ``source`` value, so that ``--fix`` can
write back only the cells it changed: everything else (outputs, metadata, ids, key order,
indentation, escapes, the final line break) stays byte for byte as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, but not in typeshed
from typing import Generic, TypeVar

from jax_lsp.core.findings import Edit, Span
from jax_lsp.core.notebooks import ipython
from jax_lsp.core.record import Record
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.core.text.edits import apply_edits

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")

K = TypeVar("K")


class NotebookError(ValueError):
    """Not a notebook jax-lsp can read; ``line`` and ``column`` (0-based) locate it in the file."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(f"Not a valid notebook: {message}")
        self.line, self.column = line, column


class CellEditError(ValueError):
    """An edit that crosses cells or touches a line of IPython syntax."""


# Joining ---------------------------------------------------------------------
class Layout(Record, Generic[K]):
    """Code cells joined as one module's text: each cell (named by a key: its number in a file,
    its URI in an editor) holds the joined lines ``first`` up to ``end``."""

    __slots__ = ("text", "cells", "opaque_lines")
    text: str
    cells: tuple[tuple[K, int, int], ...]  # (key, first line, line after its last)
    opaque_lines: frozenset[int]  # joined lines whose IPython syntax was replaced

    def __init__(
        self, text: str, cells: tuple[tuple[K, int, int], ...], opaque_lines: frozenset[int] = frozenset()
    ) -> None:
        self._assign(text, cells, opaque_lines)

    def first_line(self, key: K) -> int:
        return next(first for k, first, _ in self.cells if k == key)

    def to_cell(self, span: Span) -> tuple[K, Span] | None:
        """The cell holding ``span`` and the span within it; None if it crosses cells."""
        for key, first, end in self.cells:
            if first <= span.start.line < end:
                if (span.end.line, span.end.column) > (end, 0):
                    return None
                return key, Span.of(
                    span.start.line - first, span.start.column, span.end.line - first, span.end.column
                )
        return None

    def edit_to_cell(self, span: Span) -> tuple[K, Span] | None:
        """Like ``to_cell``, and None too for a span on a line of IPython syntax: the cell's text
        there is not the joined text's, so an edit computed on the latter would corrupt it."""
        if any(span.start.line <= line <= span.end.line for line in self.opaque_lines):
            return None
        return self.to_cell(span)


def join_cells(cells: Iterable[tuple[K, str]]) -> Layout[K]:
    """The cells' texts, IPython syntax made opaque, joined in order as one module."""
    parts: list[str] = []
    placed: list[tuple[K, int, int]] = []
    opaque: set[int] = set()
    line = 0
    for key, text in cells:
        python = ipython.opaque(text)
        original = split_lines(text)
        opaque.update(line + n for n, shown in enumerate(split_lines(python)) if shown != original[n])
        python = _with_final_newline(python)
        count = len(split_lines(python)) - 1  # split_lines ends with "" after a final line break
        parts.append(python)
        placed.append((key, line, line + count))
        line += count
    return Layout("".join(parts), tuple(placed), frozenset(opaque))


def _with_final_newline(text: str) -> str:
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


# Reading -----------------------------------------------------------------------
class Cell(Record):
    __slots__ = ("number", "source", "original", "value", "literals", "is_list")
    number: int  # 1-based, counting every cell (markdown too), as the notebook shows them
    source: str  # the cell's text now (after edits)
    original: str  # the cell's text as read
    value: tuple[int, int]  # offsets of its `source` JSON value in the file's text
    literals: tuple[tuple[int, int], ...]  # offsets of the value's JSON strings, in order
    is_list: bool  # `source` is a list of strings (nbformat's usual form), not one string

    def __init__(
        self,
        number: int,
        source: str,
        original: str,
        value: tuple[int, int],
        literals: tuple[tuple[int, int], ...],
        is_list: bool,
    ) -> None:
        self._assign(number, source, original, value, literals, is_list)


class Notebook(Record):
    __slots__ = ("raw", "cells", "layout")
    raw: str  # the file's text
    cells: tuple[Cell, ...]  # the code cells checked, in order
    layout: Layout[int]  # keyed by cell number

    def __init__(self, raw: str, cells: tuple[Cell, ...], layout: Layout[int]) -> None:
        self._assign(raw, cells, layout)

    @classmethod
    def read(cls, data: bytes) -> Notebook:
        """Raises NotebookError for anything but a well-formed nbformat 4 notebook."""
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n")
            raise NotebookError(f"the file is not UTF-8 (line {line + 1})", line) from None
        start = 1 if raw.startswith("\ufeff") else 0
        try:
            scan = _Scan(raw, start)
        except ValueError:  # JSONDecodeError too
            raise _json_error(raw[start:]) from None
        except RecursionError:
            raise NotebookError("not JSON that can be read: nested too deep") from None
        cells = scan.code_cells()
        return cls(raw, cells, join_cells((cell.number, cell.source) for cell in cells))

    # Editing and writing ---------------------------------------------------------
    def with_edits(self, edits: Iterable[Edit]) -> Notebook:
        """The notebook after ``edits`` (positions of the joined text). Raises CellEditError."""
        by_cell: dict[int, list[Edit]] = {}
        for edit in edits:
            placed = self.layout.edit_to_cell(edit.span)
            if placed is None:
                raise CellEditError(
                    f"the edit at line {edit.span.start.line + 1} crosses cells or IPython syntax"
                )
            number, span = placed
            by_cell.setdefault(number, []).append(edit.replace(span=span))
        cells = []
        for cell in self.cells:
            if cell.number in by_cell:
                # Edited as in the joined text, which may end the cell with an added line break.
                piece = _with_final_newline(cell.source)
                edited = apply_edits(piece, by_cell[cell.number])
                if piece != cell.source and edited.endswith("\n"):
                    edited = edited[:-1]
                cell = cell.replace(source=edited)
            cells.append(cell)
        return self.replace(cells=tuple(cells), layout=join_cells((c.number, c.source) for c in cells))

    def _cell(self, number: int) -> Cell:
        return next(cell for cell in self.cells if cell.number == number)

    def to_bytes(self) -> bytes:
        """The file with the changed cells' sources written in, every other byte as read."""
        ascii_only = self.raw.isascii()  # a file written with \\u escapes keeps them
        layout = self._list_layout()
        pieces, cursor = [], 0
        for cell in self.cells:
            if cell.source == cell.original:
                continue
            start, end = cell.value
            pieces += [self.raw[cursor:start], self._encode(cell, ascii_only, layout)]
            cursor = end
        pieces.append(self.raw[cursor:])
        return "".join(pieces).encode("utf-8")

    def _list_layout(self) -> tuple[str, str, str] | None:
        """(after ``[``, between strings, before ``]``) as the file lays out a source list."""
        for cell in self.cells:
            if cell.is_list and cell.literals:
                (first_start, first_end), (_, last_end) = cell.literals[0], cell.literals[-1]
                opening = self.raw[cell.value[0] + 1 : first_start]
                closing = self.raw[last_end : cell.value[1] - 1]
                between = (
                    self.raw[first_end : cell.literals[1][0]] if len(cell.literals) > 1 else "," + opening
                )
                return opening, between, closing
        return None

    def _encode(self, cell: Cell, ascii_only: bool, layout: tuple[str, str, str] | None) -> str:
        if not cell.is_list:
            return json.dumps(cell.source, ensure_ascii=ascii_only)
        lines = cell.source.splitlines(keepends=True)  # as nbformat splits a cell's text
        if not lines:
            return "[]"
        # Unchanged lines keep their exact JSON text (escapes, as the writer chose them).
        known = {json.loads(self.raw[a:b]): self.raw[a:b] for a, b in cell.literals}
        literals = [known.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in lines]
        opening, between, closing = layout or ("", ", ", "")
        return "[" + opening + between.join(literals) + closing + "]"

    # Positions in the file ---------------------------------------------------------
    def file_position(self, number: int, line: int, column: int) -> tuple[int, int]:
        """Where (``line``, ``column``) of cell ``number`` is in the file's text (0-based lines,
        code-point columns), for reports that can only point into the file itself."""
        cell = self._cell(number)
        if cell.source != cell.original:  # not in the file as read: its `source` is the best guess
            return _position(self.raw, cell.value[0])
        offset = sum(len(text) for text in split_lines(cell.source)[:line]) + column
        for start, end in cell.literals:
            text = json.loads(self.raw[start:end])
            if offset < len(text) or (start, end) == cell.literals[-1]:
                return _position(self.raw, start + 1 + _escaped_length(self.raw[start + 1 : end - 1], offset))
            offset -= len(text)
        return _position(self.raw, cell.value[0])  # an empty `source`


def _escaped_length(literal: str, characters: int) -> int:
    """How many characters of a JSON string's body (no quotes) spell its first ``characters``."""
    i = 0
    while characters > 0 and i < len(literal):
        if literal[i] != "\\":
            i += 1
        elif literal[i + 1] != "u":
            i += 2
        else:
            code = int(literal[i + 2 : i + 6], 16)
            i += 12 if 0xD800 <= code < 0xDC00 and literal[i + 6 : i + 8] == "\\u" else 6
        characters -= 1
    return i


# The JSON structure ------------------------------------------------------------------
class _Scan:
    """One strict pass over the notebook's JSON: the top-level values the checks need, and
    where each cell's members are. Each value is decoded once (a cell's outputs by the C
    decoder, skipped). Raises ValueError where the text is not JSON."""

    def __init__(self, raw: str, start: int) -> None:
        self.raw = raw
        self.top: dict[str, object] = {}
        self.cells: list[tuple[int, dict[str, tuple[int, int]]]] | None = None  # (start, member spans)
        end = _object(raw, _space(raw, start), self._top_member)
        if _space(raw, end) != len(raw):
            raise ValueError("extra data after the notebook")

    def _top_member(self, key: str, i: int) -> int:
        if key == "cells" and self.raw.startswith("[", i):
            self.cells = []
            return _array(self.raw, i, self._cell)
        value, end = _DECODER.raw_decode(self.raw, i)
        self.top[key] = value
        if key == "cells":
            self.cells = None  # not a list
        return end

    def _cell(self, i: int) -> int:
        fields: dict[str, tuple[int, int]] = {}

        def member(key: str, j: int) -> int:
            end = _DECODER.raw_decode(self.raw, j)[1]
            fields[key] = (j, end)
            return end

        assert self.cells is not None
        self.cells.append((i, fields))
        return (
            _object(self.raw, i, member)
            if self.raw.startswith("{", i)
            else _DECODER.raw_decode(self.raw, i)[1]
        )

    def code_cells(self) -> tuple[Cell, ...]:
        version = self.top.get("nbformat")
        if version != 4:
            hint = (
                " (convert it: jupyter nbconvert --to notebook --inplace FILE)"
                if version in (1, 2, 3)
                else ""
            )
            raise NotebookError(f"nbformat {version!r} is not supported, only nbformat 4{hint}")
        if not _is_python(self.top.get("metadata")):
            return ()
        if self.cells is None:
            raise NotebookError("it has no list of `cells`")
        found = []
        for number, (start, fields) in enumerate(self.cells, 1):
            if not self.raw.startswith("{", start):
                raise NotebookError(f"cell {number} is not an object", *_position(self.raw, start))
            kind = fields.get("cell_type")
            if kind is None or json.loads(self.raw[slice(*kind)]) != "code":
                continue  # markdown and raw cells are text, not code
            if "source" not in fields:
                raise NotebookError(f"cell {number} has no `source`", *_position(self.raw, start))
            found.append(_cell(self.raw, number, fields["source"]))
        return tuple(found)


def _json_error(text: str) -> NotebookError:
    """Why ``text`` is no notebook, as the standard decoder words it."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return NotebookError(f"not JSON: {exc.msg}", exc.lineno - 1, exc.colno - 1)
    except RecursionError:
        return NotebookError("not JSON that can be read: nested too deep")
    if not isinstance(document, dict):
        return NotebookError("the file is JSON, but not an object")
    return NotebookError("the file's JSON could not be read")  # valid JSON the scan refused


def _cell(raw: str, number: int, value: tuple[int, int]) -> Cell:
    is_list = raw.startswith("[", value[0])
    literals: list[tuple[int, int]] = []

    def element(i: int) -> int:
        end = _DECODER.raw_decode(raw, i)[1]
        literals.append((i, end))
        return end

    if is_list:
        _array(raw, value[0], element)
    else:
        literals.append(value)
    texts = [json.loads(raw[a:b]) for a, b in literals]
    if not all(isinstance(t, str) for t in texts):
        raise NotebookError(f"the `source` of cell {number} is not text", *_position(raw, value[0]))
    source = "".join(texts)
    return Cell(number, source, source, value, tuple(literals), is_list)


def _is_python(metadata: object) -> bool:
    """Whether the notebook's language is Python (or not said): others are not checked."""
    if not isinstance(metadata, dict):
        return True
    for table, key in (("language_info", "name"), ("kernelspec", "language")):
        info = metadata.get(table)
        language = info.get(key) if isinstance(info, dict) else None
        if isinstance(language, str):
            return language.lower() == "python"
    return True


def _position(raw: str, offset: int) -> tuple[int, int]:
    line = raw.count("\n", 0, offset)
    return line, offset - (raw.rfind("\n", 0, offset) + 1)


def _space(raw: str, i: int) -> int:
    space = _SPACE.match(raw, i)
    assert space is not None  # the pattern matches the empty string
    return space.end()


def _expect(raw: str, i: int, char: str) -> int:
    if not raw.startswith(char, i):
        raise ValueError(f"expected {char!r} at {i}")
    return i + 1


def _object(raw: str, i: int, member: Callable[[str, int], int]) -> int:
    """Walk the JSON object at ``raw[i]``: ``member(key, start)`` reads each value and returns
    where it ends. Returns where the object ends."""
    i = _space(raw, _expect(raw, i, "{"))
    if raw.startswith("}", i):
        return i + 1
    while True:
        key, i = scanstring(raw, _expect(raw, i, '"'))
        i = _space(raw, _expect(raw, _space(raw, i), ":"))
        i = _space(raw, member(key, i))
        if not raw.startswith(",", i):
            return _expect(raw, i, "}")
        i = _space(raw, i + 1)


def _array(raw: str, i: int, element: Callable[[int], int]) -> int:
    """Walk the JSON array at ``raw[i]``: ``element(start)`` reads each one and returns its end."""
    i = _space(raw, _expect(raw, i, "["))
    if raw.startswith("]", i):
        return i + 1
    while True:
        i = _space(raw, element(i))
        if not raw.startswith(",", i):
            return _expect(raw, i, "]")
        i = _space(raw, i + 1)
