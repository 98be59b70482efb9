"""Cutting source into statements by its lines, without parsing: top-level statements, a class
body's statements, and whether a piece of source closes every string and bracket it opens.
The recovering parse, the deferred definitions and the tags' lazy statements all cut here."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Sequence

# A line that starts a new top-level statement: not indented, not blank, not a comment,
# and not a clause that continues the statement above (else/elif/except/finally/case).
TOP_LEVEL = re.compile(r"(?!(else|elif|except|finally)\b)[^\s#)\]}]")


_NOT_A_STATEMENT_START = frozenset(["", " ", "\t", "\n", "\r", "\f", "#", ")", "]", "}"])


def statement_chunks(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) line ranges of top-level statements, decorators kept with their def."""
    starts: list[int] = []
    pending_decorator = False
    for number, line in enumerate(lines):
        if line[:1] in _NOT_A_STATEMENT_START or not TOP_LEVEL.match(line):  # most lines: the first test
            continue
        if not pending_decorator:
            starts.append(number)
        pending_decorator = line.startswith("@")
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return list(zip(starts, starts[1:] + [len(lines)]))


def at_line(chunk: str, start: int) -> str:
    """`chunk` preceded by `start` empty lines: parsed, its nodes and errors carry the file's line
    numbers. The parser pays for each empty line (about 30 ms for 1,000,000 of them), so a file cut
    into many chunks parses them with `parse_at_line` instead."""
    return "\n" * start + chunk


# Renumbering a parsed chunk walks its nodes: about 10 us a line, where the parser skips this
# many empty lines (about 50 ns each). A chunk no further down than this many times its own
# lines is padded instead: padding stays linear in the file, and costs less than the walk.
PADDED_LINES_PER_LINE = 50


def parse_at_line(chunk: str, path: str, start: int) -> ast.Module:
    """`chunk` parsed as if it began at 0-based line `start`: near the top, padded with `start`
    empty lines; further down, parsed alone, then renumbered (linear in the chunk, where padding
    it made a file of 30,000 functions take a minute). A chunk that does not parse is parsed
    again at its line, so that the error is the one a parse of the file gives."""
    if start <= PADDED_LINES_PER_LINE * chunk.count("\n"):
        return ast.parse(at_line(chunk, start), filename=path)
    try:
        tree = ast.parse(chunk, filename=path)
    except SyntaxError:
        return ast.parse(at_line(chunk, start), filename=path)
    return ast.increment_lineno(tree, start) if start > 0 else tree


# What can hide a bracket, a quote or a line break from a plain search: strings and comments.
# Each string is matched as runs of plain characters between escapes and lone quotes ("unrolled"),
# not one character at a time: about twice as fast, and the same matches.
STRING_OR_COMMENT_TEXT = "|".join(
    [
        r"#[^\r\n]*",
        r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""',
        r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''",
        r'"[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"',
        r"'[^'\\\r\n]*(?:\\.[^'\\\r\n]*)*'",
    ]
)
_STRING_OR_COMMENT = re.compile(STRING_OR_COMMENT_TEXT, re.S)


# Every byte but a bracket's: deleted from the UTF-8 bytes of code, whose other characters
# encode to bytes of 0x80 and above, it leaves the brackets in order (faster than a regex).
_NOT_BRACKET = bytes(byte for byte in range(256) if byte not in b"()[]{}")
IN_A_CLASS = "class _:\n"


def in_a_class(statements: str, start: int) -> str:
    """Indented statements of a class body, starting at 0-based line `start`, inside a class of
    their own on the line above: parsed, they keep their lines and columns in the file."""
    return at_line(IN_A_CLASS + statements, start - 1)


def parse_in_a_class(statements: str, path: str, start: int) -> ast.Module:
    """`in_a_class(statements, start)`, parsed as `parse_at_line` does."""
    return parse_at_line(IN_A_CLASS + statements, path, start - 1)


def class_body(tree: ast.Module) -> list[ast.stmt]:
    """The statements `in_a_class` put in its class."""
    return [statement for c in tree.body if isinstance(c, ast.ClassDef) for statement in c.body]


def closes_within(chunk: str) -> bool:
    """Whether every string, bracket and line continuation that `chunk` opens closes within
    it, and it closes none opened before it: then the chunk is a whole statement. Strict: a
    quote it cannot pair (an f-string of Python 3.12 nesting its own quotes) makes it False,
    and so does a bracket closed by one of another kind."""
    has_string_or_comment = "#" in chunk or '"' in chunk or "'" in chunk  # a search is cheaper than the sub
    code = _STRING_OR_COMMENT.sub(" ", chunk) if has_string_or_comment else chunk
    if '"' in code or "'" in code:  # a stray quote: only an unterminated string leaves one
        return False
    return brackets_pair(code.encode("utf-8", "surrogatepass")) and not chunk.rstrip().endswith("\\")


def brackets_pair(code: bytes) -> bool:
    """Whether each bracket of `code` (strings and comments left out) closes one of its kind
    that it opened, and none is left open."""
    brackets = code.translate(None, _NOT_BRACKET)
    while brackets:  # pairs removed from the inside out, a level at a time
        inner_removed = brackets.replace(b"()", b"").replace(b"[]", b"").replace(b"{}", b"")
        if len(inner_removed) == len(brackets):
            return False
        brackets = inner_removed
    return True


def without_comments(chunk: str) -> str:
    """`chunk` with each comment blanked, its strings kept (an f-string's fields hold names)."""
    if "#" not in chunk:
        return chunk
    return _STRING_OR_COMMENT.sub(lambda m: " " if m.group(0).startswith("#") else m.group(0), chunk)


def holds_line(lines: Sequence[int], first: int, last: int) -> bool:
    """Whether the sorted `lines` hold one in first..last."""
    index = bisect.bisect_left(lines, first)
    return index < len(lines) and lines[index] <= last


def body_statements(lines: list[str], header: int, end: int) -> tuple[str, list[int]] | None:
    """The indentation of a class body in lines (header, end), and the first lines of its
    statements, decorators kept with their definition; None when the header is not one line ending with `:`, or the
    body's last statement leaves a string or bracket open. A line at the body's indentation
    inside a string or brackets (a docstring's last line) starts no statement: pieces are joined
    until they close what they open."""
    if not _STRING_OR_COMMENT.sub(" ", lines[header]).rstrip().endswith(":"):
        return None
    first = next(
        (n for n in range(header + 1, end) if lines[n].strip() and not lines[n].lstrip().startswith("#")),
        None,
    )
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())] if first is not None else ""
    if not indent or not closes_within(lines[header]):
        return None
    width = len(indent)
    candidates: list[int] = []
    pending_decorator = False
    for n in range(header + 1, end):  # blank and comment lines start nothing (TOP_LEVEL)
        line = lines[n]
        if (
            line[width : width + 1] not in _NOT_A_STATEMENT_START
            and line.startswith(indent)
            and TOP_LEVEL.match(line, width)
        ):
            if not pending_decorator:
                candidates.append(n)
            pending_decorator = line.startswith("@", width)
    starts: list[int] = []
    statement_start: int | None = None
    for first, after in zip(candidates, [*candidates[1:], end]):
        statement_start = first if statement_start is None else statement_start
        if closes_within("".join(lines[statement_start:after])):
            starts.append(statement_start)
            statement_start = None
    return (indent, starts) if statement_start is None and starts else None


class LazyStatements:
    """Lines cut into top-level statements, each parsed when one of its lines is first asked for
    (lines that no statement of a tree covers: what a lazy parse left out)."""

    def __init__(self, start: int, end: int, lines: list[str]):
        self.start, self.end = start, end  # 0-based, end excluded
        self._lines = lines
        self._chunks = [(start + first, start + last) for first, last in statement_chunks(lines)]
        self._parsed: dict[int, list[ast.stmt]] = {}

    def cut_at_statements(self) -> bool:
        """Whether each chunk closes every string, bracket and line continuation it opens: then
        each starts a statement (a line inside a string may look like one)."""
        return all(closes_within(self._text(start, end)) for start, end in self._chunks)

    def _text(self, start: int, end: int) -> str:
        return "".join(self._lines[start - self.start : end - self.start])

    def statements(self, path: str, wanted: list[int]) -> list[ast.stmt]:
        """The statements of the chunks that span one of the 1-based `wanted` lines; a chunk that
        leaves a string or bracket open, or does not parse, has none (as when the tree was read)."""
        found = []
        for start, end in self._chunks:
            if not holds_line(wanted, start + 1, end):
                continue
            if start not in self._parsed:
                chunk = self._text(start, end)
                self._parsed[start] = _statements_or_none(chunk, path, start) if closes_within(chunk) else []
            found += self._parsed[start]
        return found


def _statements_or_none(chunk: str, path: str, start: int) -> list[ast.stmt]:
    """The statements of `chunk` at line `start`; none when it does not parse."""
    try:
        return ast.parse("\n" * start + chunk, filename=path).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
