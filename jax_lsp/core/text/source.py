"""Decoding and parsing a Python file, as far as it goes.

Half-typed code is the normal case in an editor: when the whole file does not
parse, each top-level statement is parsed on its own so that a syntax error in
one function hides only that function. A statement that only a newer Python
parses (newer_syntax.py), or any that fails in a project requiring a newer
Python than the running one (python_versions.py), is no syntax error: it is
skipped, and recorded in `SourceModule.skipped`.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import functools
import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jax_lsp.core.codes import CODES, DECODE_ERROR, SYNTAX_ERROR
from jax_lsp.core.findings import Finding, Located, Position, Span
from jax_lsp.core.record import Record
from jax_lsp.core.text.python_versions import RUNNING, SkippedStatement
from jax_lsp.core.text.triggers import trigger_lines

if TYPE_CHECKING:
    from jax_lsp.core.text.newer_syntax import Construct
    from jax_lsp.core.text.python_versions import ProjectPythons

# A line that starts a new top-level statement: not indented, not blank, not a comment,
# and not a clause that continues the statement above (else/elif/except/finally/case).
_TOP_LEVEL = re.compile(r"(?!(else|elif|except|finally)\b)[^\s#)\]}]")
_NOT_A_STATEMENT_START = frozenset(["", " ", "\t", "\n", "\r", "\f", "#", ")", "]", "}"])


class SourceModule:
    def __init__(
        self,
        path: str,
        text: str,
        tree: ast.Module,
        problems: list[Finding] | None = None,
        encoding: str = "utf-8",
        skipped: list[SkippedStatement] | None = None,
    ) -> None:
        self.path = path
        self.text = text
        self.tree = tree
        self.problems: list[Finding] = [] if problems is None else problems
        self.encoding = encoding
        self.skipped: list[SkippedStatement] = [] if skipped is None else skipped  # need a newer Python
        self._utf8_lines: dict[int, bytes] = {}
        self._marker_lines: Sequence[int] | None = None
        self._marked_names: set[str] = set()

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    def _triggers(self) -> Sequence[int]:
        if self._marker_lines is None:
            self._marker_lines = trigger_lines(self.text)
        return self._marker_lines

    def mark_name(self, name: str) -> None:
        """Treat `name` as a trigger too: it was bound to something that holds one
        (`ds = jax.checkpoint_policies.dots_saveable`), so lines using it may hold a site."""
        marker_lines = self._triggers()
        if name in self._marked_names:  # bound again (`f = ...` in each branch of an `elif` chain)
            return
        self._marked_names.add(name)
        text, more, line, counted = self.text, set(), 1, 0
        position = text.find(name)
        while position != -1:
            before = text[position - 1] if position else " "
            after = text[position + len(name) : position + len(name) + 1] or " "
            if not (_is_name_char(before) or _is_name_char(after)):
                line += text.count("\n", counted, position)
                counted = position
                more.add(line)
            position = text.find(name, position + len(name))
        if more:
            self._marker_lines = sorted(more.union(marker_lines))

    def could_hold_site(self, node: Located) -> bool:
        """Whether the lines of `node` hold a trigger (triggers.py) or a marked name."""
        return holds_line(self._triggers(), node.lineno, node.end_lineno or node.lineno)

    def line_text(self, line: int) -> str:
        """0-based line, without its line break."""
        if 0 <= line < len(self.lines):
            return self.lines[line].rstrip("\r\n")
        return ""

    def column(self, lineno: int, byte_col: int) -> int:
        """ast's (1-based line, UTF-8 byte column) -> code-point column."""
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        if line.isascii():
            return byte_col
        encoded = self._utf8_lines.get(lineno)
        if encoded is None:
            encoded = self._utf8_lines[lineno] = line.encode("utf-8", "surrogatepass")
        return len(encoded[:byte_col].decode("utf-8", "replace"))

    def position(self, lineno: int, byte_col: int) -> Position:
        return Position(lineno - 1, self.column(lineno, byte_col))

    def span(self, node: Located) -> Span:
        start = self.position(node.lineno, node.col_offset)
        end_lineno = node.end_lineno or node.lineno
        end_col = node.end_col_offset
        end = self.position(end_lineno, end_col) if end_col is not None else start
        return Span(start, end)

    def name_span(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Span:
        """The span of the name in `def name(`."""
        line = self.line_text(node.lineno - 1)
        start = self.column(node.lineno, node.col_offset)
        match = re.compile(r"\b" + re.escape(node.name) + r"\b").search(line, start)
        if not match:
            return self.span(node)
        return Span.of(node.lineno - 1, match.start(), node.lineno - 1, match.end())

    def segment(self, where: Located | Span) -> str:
        span = where if isinstance(where, Span) else self.span(where)
        if span.start.line == span.end.line:
            return self.line_text(span.start.line)[span.start.column : span.end.column]
        parts = [self.line_text(span.start.line)[span.start.column :]]
        parts += [self.line_text(n) for n in range(span.start.line + 1, span.end.line)]
        parts.append(self.line_text(span.end.line)[: span.end.column])
        return "\n".join(parts)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where Python and LSP split (\n, \r\n, \r).

    str.splitlines also splits at form feeds and U+2028, which would shift every line after."""
    if "\r" not in text:  # most files: a split at \n alone, ~3x faster than the expression
        lines = text.split("\n")
        last = lines.pop()
        lines = [line + "\n" for line in lines]
        lines.append(last)  # "" after a final line break, as below
        return lines
    lines = _LINE.findall(text)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    return lines


def _is_name_char(char: str) -> bool:
    return char.isidentifier() or char.isdigit()


def _detect_encoding(data: bytes) -> str:
    """tokenize.detect_encoding's encoding for `data` (raising SyntaxError as it does); without
    tokenize (~2 ms to import) when the first two lines are UTF-8 and declare no encoding."""
    first = data.find(b"\n")
    second = -1 if first < 0 else data.find(b"\n", first + 1)
    head = data if second < 0 else data[: second + 1]
    if b"coding" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    import tokenize

    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def decode(data: bytes) -> tuple[str, str, str | None]:
    """Bytes -> (text, encoding, problem). Never raises: undecodable bytes become U+FFFD."""
    try:
        encoding = _detect_encoding(data)
    except SyntaxError as exc:
        return data.decode("utf-8", "replace"), "utf-8", f"Cannot detect the encoding: {exc}"
    try:
        codecs.lookup(encoding)
    except LookupError:
        return data.decode("utf-8", "replace"), "utf-8", f"Unknown encoding {encoding!r}"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        text = data.decode(encoding, "replace")
        return text, encoding, f"Not valid {encoding} (line {line}); undecodable bytes were replaced"
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, encoding, None


def _problem(path: str, code: str, message: str, line: int, column: int, text: str) -> Finding:
    lines = [l.rstrip("\r\n") for l in split_lines(text)]
    line = min(max(line, 0), len(lines) - 1)
    column = min(max(column, 0), len(lines[line]))
    span = Span.of(line, column, line, len(lines[line]))
    return Finding(path, code, CODES[code].severity, message, span)


def _statement_chunks(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) line ranges of top-level statements, decorators kept with their def."""
    starts: list[int] = []
    pending_decorator = False
    for number, line in enumerate(lines):
        if line[:1] in _NOT_A_STATEMENT_START or not _TOP_LEVEL.match(line):  # most lines: the first test
            continue
        if not pending_decorator:
            starts.append(number)
        pending_decorator = line.startswith("@")
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return list(zip(starts, starts[1:] + [len(lines)]))


class ChunkError(Record):
    """Why one top-level statement did not parse on its own."""

    __slots__ = ("error", "balanced", "start", "text", "newer")
    error: SyntaxError  # numbered as lines of the whole file
    balanced: bool  # its brackets, strings and line continuations all close within it
    start: int  # its first line, 0-based
    text: str  # its source; when `newer`, rewritten in the running Python's syntax, on the same lines
    newer: SkippedStatement | None  # set when only a newer Python than the running one parses it

    def __init__(
        self, error: SyntaxError, balanced: bool, start: int, text: str, newer: SkippedStatement | None = None
    ) -> None:
        self._assign(error, balanced, start, text, newer)

    @property
    def lines(self) -> list[str]:
        lines = split_lines(self.text)
        return lines[:-1] if lines[-1] == "" else lines


# A class of this many lines or more is parsed, and kept between edits, statement by statement.
LARGE_CLASS_LINES = 40


class ParseCache:
    """Per-statement parse results of one document, reused across edits.

    An editor re-checks a buffer on every keystroke: only the top-level statements whose text
    or first line changed are parsed again (moving a tree to other lines would cost a walk
    over every node, more than parsing it)."""

    def __init__(self) -> None:
        self._statements: dict[tuple[int, str], list[ast.stmt] | ChunkError] = {}
        self._members: dict[tuple[int, str], list[ast.stmt]] = {}  # statements of large classes

    def parse(self, text: str, path: str) -> tuple[list[ast.stmt], list[ChunkError]]:
        """(the statements that parsed, why the others did not)."""
        lines = split_lines(text)
        kept: dict[tuple[int, str], list[ast.stmt] | ChunkError] = {}
        members: dict[tuple[int, str], list[ast.stmt]] = {}
        body: list[ast.stmt] = []
        failures: list[ChunkError] = []
        for start, end in _statement_chunks(lines):
            key = (start, "".join(lines[start:end]))
            parsed = self._statements.get(key)
            if parsed is None and end - start >= LARGE_CLASS_LINES:
                parsed = self._class_by_members(lines, start, end, path, members)
            if parsed is None:
                parsed = _parse_chunk(key[1], path, start)
            kept[key] = parsed
            if isinstance(parsed, ChunkError):
                failures.append(parsed)
            else:
                body.extend(parsed)
        self._statements = kept
        self._members = members
        return body, failures

    def _class_by_members(
        self, lines: list[str], start: int, end: int, path: str, kept: dict[tuple[int, str], list[ast.stmt]]
    ) -> list[ast.stmt] | None:
        """A large class parsed statement by statement of its body, each parsed again only if
        its text or first line changed: an edit inside one method costs that method. None when
        the class is not laid out plainly, or a statement does not parse alone (the caller then
        parses the class whole, and reports any error as before)."""
        header = next(n for n in range(start, end) if not lines[n].startswith("@"))
        body = _body_statements(lines, header, end) if lines[header].startswith("class") else None
        if body is None:
            return None
        indent, body_starts = body
        try:
            shell = ast.parse(_at_line("".join(lines[start : header + 1]) + indent + "pass\n", start), path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        node = shell.body[0] if len(shell.body) == 1 else None
        if not isinstance(node, ast.ClassDef):
            return None
        node.body = []
        for first, after in zip(body_starts, [*body_starts[1:], end]):
            key = (first, "".join(lines[first:after]))
            statements = self._members.get(key)
            if statements is None:
                try:
                    statements = _class_body(ast.parse(_in_a_class(key[1], first), path))
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return None
            kept[key] = statements
            node.body += statements
        if not node.body:
            return None
        node.end_lineno, node.end_col_offset = node.body[-1].end_lineno, node.body[-1].end_col_offset
        return [node]


def _parse_chunk(chunk: str, path: str, start: int) -> list[ast.stmt] | ChunkError:
    """The statements of `chunk`, numbered as if it started at 0-based line `start`."""
    try:
        return ast.parse(_at_line(chunk, start), filename=path).body
    except SyntaxError as exc:
        return _chunk_error(chunk, path, start, exc)
    except (ValueError, RecursionError, MemoryError) as exc:
        return ChunkError(SyntaxError(str(exc)), False, start, chunk)


def _at_line(chunk: str, start: int) -> str:
    """`chunk` preceded by `start` empty lines: parsed, its nodes and errors carry the file's line
    numbers, which costs the parser next to nothing (ast.increment_lineno walks every node)."""
    return "\n" * start + chunk


def _chunk_error(chunk: str, path: str, start: int, error: SyntaxError) -> ChunkError:
    from jax_lsp.core.text.newer_syntax import (
        downgrade,  # here: a file that parses never needs it (start-up time)
    )

    newer = downgrade(chunk)
    if newer is not None:
        try:
            ast.parse(_at_line(newer.text, start), filename=path)
        except SyntaxError as remaining:
            error = remaining  # what fails once the newer syntax is set aside: a real error
        except (ValueError, RecursionError, MemoryError):
            pass
        else:
            whys = "; ".join(dict.fromkeys(c.what for c in newer.constructs))
            skipped = SkippedStatement(start, newer.python, whys)
            return ChunkError(error, _balanced(chunk), start, newer.text, skipped)
    return ChunkError(error, _balanced(chunk), start, chunk)


def _balanced(chunk: str) -> bool:
    """Whether every bracket, string and line continuation of `chunk` closes within it.

    A chunk that opens none into the next one is a whole statement: its syntax error is real,
    not an artefact of cutting the file at a line that only looks like a new statement."""
    import tokenize  # here: only a chunk that fails to parse is tokenized

    try:
        for _ in tokenize.generate_tokens(io.StringIO(chunk).readline):
            pass
    except (tokenize.TokenError, SyntaxError):
        return False
    return True


def _parse_recovering(
    text: str, path: str, cache: ParseCache | None, pythons: ProjectPythons | None
) -> tuple[ast.Module, list[Finding], list[SkippedStatement]]:
    """(the tree of what parses, the first syntax error, the statements only a newer Python parses)."""
    whole_error = None
    if cache is None:
        try:
            return ast.parse(text, filename=path), [], []
        except SyntaxError as exc:
            whole_error = exc
        except (ValueError, RecursionError, MemoryError) as exc:
            whole_error = SyntaxError(str(exc))
        cache = ParseCache()
    body, failures = cache.parse(text, path)
    if not failures:
        return ast.Module(body=body, type_ignores=[]), [], []
    first_error = None
    if not all(failure.balanced for failure in failures):
        # A line inside a string or brackets looked like a new statement: the whole file decides.
        tree, skipped, first_error = _parse_whole(text, path, failures, whole_error)
        if tree is not None:
            return tree, [], skipped
    module = ast.Module(body=body, type_ignores=[])
    skipped = [failure.newer for failure in failures if failure.newer is not None]
    real = [failure for failure in failures if failure.newer is None]
    if not real:
        return module, [], skipped
    required = pythons.required(path) if pythons is not None else None
    if required is not None and required.version > RUNNING:
        # The project is for a newer Python: whatever fails may be its syntax.
        skipped += [SkippedStatement(failure.start, required.version, required.origin) for failure in real]
        return module, [], sorted(skipped, key=lambda statement: statement.line)
    return module, [_syntax_problem(path, first_error or real[0].error, text)], skipped


def _syntax_problem(path: str, error: SyntaxError, text: str) -> Finding:
    message = f"Syntax error: {error.msg}; the rest of the file was still checked"
    return _problem(path, SYNTAX_ERROR, message, (error.lineno or 1) - 1, (error.offset or 1) - 1, text)


def _parse_whole(
    text: str, path: str, failures: list[ChunkError], error: SyntaxError | None
) -> tuple[ast.Module | None, list[SkippedStatement], SyntaxError | None]:
    """The file parsed at once, less its statements in newer syntax: (tree, those statements,
    None); or (None, [], the first real error). `error`: the text's own, when known.

    If the text fails, the statements found newer on their own are parsed as rewritten for the
    running Python; then, if it still fails in a statement cut in two (an unbalanced chunk) that
    may hold newer syntax, the whole text is rewritten: that costs a good part of a parse."""
    from jax_lsp.core.text.newer_syntax import downgrade, might_be_newer

    try:
        if error is None:
            try:
                return ast.parse(text, filename=path), [], None
            except SyntaxError as exc:
                error = exc
        newer_chunks = [failure for failure in failures if failure.newer is not None]
        constructs: tuple[Construct, ...] = ()
        if newer_chunks:
            lines = split_lines(text)
            for failure in newer_chunks:
                rewritten = failure.lines
                lines[failure.start : failure.start + len(rewritten)] = rewritten
            text = "".join(lines)
            try:
                tree = ast.parse(text, filename=path)
            except SyntaxError as exc:
                error = exc
            else:
                error = None
        if error is not None:
            line = (error.lineno or 1) - 1
            cut = [f for f in failures if not f.balanced and f.start <= line < f.start + len(f.lines)]
            newer = downgrade(text) if any(might_be_newer(failure.text) for failure in cut) else None
            if newer is None:
                return None, [], error
            tree, constructs = ast.parse(newer.text, filename=path), newer.constructs
    except SyntaxError as exc:
        return None, [], exc  # what remains once the newer syntax is set aside
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, [], SyntaxError(str(exc))
    ranges = [(failure.start, failure.start + len(failure.lines)) for failure in newer_chunks]
    kept = []
    skipped = [failure.newer for failure in newer_chunks if failure.newer is not None]
    for statement in tree.body:
        first = min(node.lineno for node in [statement, *getattr(statement, "decorator_list", [])]) - 1
        end = statement.end_lineno or first + 1
        inside = [c for c in constructs if first <= c.line < end]
        if any(start < end and first < stop for start, stop in ranges):
            continue
        if inside:
            whys = "; ".join(dict.fromkeys(c.what for c in inside))
            skipped.append(SkippedStatement(first, max(c.python for c in inside), whys))
        else:
            kept.append(statement)
    return ast.Module(body=kept, type_ignores=[]), sorted(skipped, key=lambda statement: statement.line), None


# The line of a top-level `def` or `class`, and the name it binds.
_DEFINITION = re.compile(r"(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)")
# The line of a method (after its indentation), and the name it binds.
_METHOD = re.compile(r"(?:async[ \t]+def|def)[ \t]+([A-Za-z_]\w*)")
# A statement holding one may bind a name in an unusual place (a walrus in a decorator).
_WALRUS = ":="
# What can hide a bracket, a quote or a line break from a plain search: strings and comments.
# Each string is matched as runs of plain characters between escapes and lone quotes ("unrolled"),
# not one character at a time: about twice as fast, and the same matches.
_STRING_OR_COMMENT = re.compile(
    "|".join(
        [
            r"#[^\r\n]*",
            r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""',
            r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''",
            r'"[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"',
            r"'[^'\\\r\n]*(?:\\.[^'\\\r\n]*)*'",
        ]
    ),
    re.S,
)
_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")


class DeferredDefinition(Record):
    """A top-level `def` or `class`, or a method of a top-level class, left unparsed: its lines
    hold no trigger word, so it can matter only through its name (a policy or factory defined
    there), when that is looked up."""

    __slots__ = ("name", "start", "end", "text", "owner")
    name: str
    start: int  # its first line, 0-based
    end: int  # the line after its last
    text: str
    owner: int | None  # a method's: the 1-based line of its class's `class` keyword

    def __init__(self, name: str, start: int, end: int, text: str, owner: int | None = None) -> None:
        self._assign(name, start, end, text, owner)

    def parse(self, path: str, pythons: ProjectPythons | None = None) -> SourceModule:
        """Its source, at its lines in the file, with its syntax error or newer syntax; a
        method (indented) inside a class statement of its own, on the line above it."""
        if self.owner is None:
            return parse_text("\n" * self.start + self.text, path, pythons=pythons)
        parsed = parse_text(_in_a_class(self.text, self.start), path, pythons=pythons)
        parsed.skipped = [
            s.replace(line=self.start) if s.line == self.start - 1 else s for s in parsed.skipped
        ]
        return parsed

    def statements(self, parsed: SourceModule) -> list[ast.stmt]:
        """What `parse` gave of it: a method's statements are those of its class of its own."""
        return parsed.tree.body if self.owner is None else _class_body(parsed.tree)


def _in_a_class(statements: str, start: int) -> str:
    """Indented statements of a class body, starting at 0-based line `start`, inside a class of
    their own on the line above: parsed, they keep their lines and columns in the file."""
    return _at_line("class _:\n" + statements, start - 1)


def _class_body(tree: ast.Module) -> list[ast.stmt]:
    """The statements `_in_a_class` put in its class."""
    return [statement for c in tree.body if isinstance(c, ast.ClassDef) for statement in c.body]


def _definition_name(chunk: str, indent: str = "", definition: re.Pattern[str] = _DEFINITION) -> str | None:
    """The name a chunk of one-line decorators and a `def` or `class` binds (`definition`), all
    indented by `indent`; else None."""
    for line in chunk.splitlines():
        if not line.startswith("@", len(indent)):
            match = definition.match(line, len(indent))
            return match.group(1) if match else None
    return None


def _closes_within(chunk: str) -> bool:
    """Whether every string, bracket and line continuation that `chunk` opens closes within
    it, and it closes none opened before it: then the chunk is a whole statement. Strict: a
    quote it cannot pair (an f-string of Python 3.12 nesting its own quotes) makes it False,
    and so does a bracket closed by one of another kind."""
    has_string_or_comment = "#" in chunk or '"' in chunk or "'" in chunk  # a search is cheaper than the sub
    code = _STRING_OR_COMMENT.sub(" ", chunk) if has_string_or_comment else chunk
    if '"' in code or "'" in code:  # a stray quote: only an unterminated string leaves one
        return False
    brackets = _NOT_BRACKET.sub("", code)
    while brackets:  # pairs removed from the inside out, a level at a time
        inner_removed = brackets.replace("()", "").replace("[]", "").replace("{}", "")
        if len(inner_removed) == len(brackets):
            return False
        brackets = inner_removed
    return not chunk.rstrip().endswith("\\")


def holds_line(lines: Sequence[int], first: int, last: int) -> bool:
    """Whether the sorted `lines` hold one in first..last."""
    index = bisect.bisect_left(lines, first)
    return index < len(lines) and lines[index] <= last


def parse_for_sites(text: str, path: str) -> tuple[ast.Module, list[DeferredDefinition]] | None:
    """The top-level statements of `text` that finding its policy sites needs, and the `def`s
    and `class`es left for later; None when none is left (the caller parses the file whole),
    or when the rest does not parse.

    A `def` or `class` is left out when no line of it holds a trigger (triggers.py): the scope
    builder would not walk it for calls, and only its name binds at module level. It is left
    out only when it, and all above it, close every string and bracket they open, so that it
    surely starts a statement; its lines are parsed as blank."""
    if "\0" in text:
        return None
    triggers = trigger_lines(text)
    lines = split_lines(text)
    kept = list(lines)
    deferred: list[DeferredDefinition] = []
    checked_to = 0  # the lines above this one are whole statements
    for start, end in _statement_chunks(lines):
        chunk = "".join(lines[start:end])
        name = _definition_name(chunk)
        if name is None or not chunk.isascii() or _WALRUS in chunk:
            continue
        whole = not holds_line(triggers, start + 1, end)
        header = next(n for n in range(start, end) if not lines[n].startswith("@"))
        if not whole and not lines[header].startswith("class"):
            continue
        if not (_closes_within(chunk) and _closes_within("".join(lines[checked_to:start]))):
            continue
        found = (
            [DeferredDefinition(name, start, end, chunk)] if whole else _methods(lines, header, end, triggers)
        )
        if not found:
            continue
        for definition in found:
            deferred.append(definition)
            kept[definition.start : definition.end] = ["\n"] * (definition.end - definition.start)
        checked_to = end
    if not deferred:
        return None
    try:
        return ast.parse("".join(kept), filename=path), deferred
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _methods(lines: list[str], header: int, end: int, triggers: Sequence[int]) -> list[DeferredDefinition]:
    """The methods of the top-level class whose `class` line is `header` (a whole statement
    ending before line `end`) that hold no trigger, left out as `parse_for_sites` leaves out
    top-level definitions; none when the class is not laid out plainly (a header of one line,
    an indented body), and never its last statement (a class body cannot be empty)."""
    body = _body_statements(lines, header, end)
    if body is None:
        return []
    indent, starts = body
    methods = []
    for first, after in zip(starts, [*starts[1:], end]):  # each closes what it opens
        member = "".join(lines[first:after])
        name = _definition_name(member, indent, _METHOD)
        if name is not None and not holds_line(triggers, first + 1, after):
            methods.append(DeferredDefinition(name, first, after, member, owner=header + 1))
    return methods if len(methods) < len(starts) else methods[:-1]


def _body_statements(lines: list[str], header: int, end: int) -> tuple[str, list[int]] | None:
    """The indentation of a class body in lines (header, end), and the first lines of its
    statements, decorators kept with their definition; None when the header is not one line ending with `:`, or the
    body's last statement leaves a string or bracket open. A line at the body's indentation
    inside a string or brackets (a docstring's last line) starts no statement: pieces are joined
    until they close what they open."""
    if not _STRING_OR_COMMENT.sub(" ", lines[header]).rstrip().endswith(":"):
        return None
    body = [n for n in range(header + 1, end) if lines[n].strip() and not lines[n].lstrip().startswith("#")]
    indent = lines[body[0]][: len(lines[body[0]]) - len(lines[body[0]].lstrip())] if body else ""
    if not indent or not _closes_within(lines[header]):
        return None
    candidates: list[int] = []
    pending_decorator = False
    for n in body:
        line = lines[n]
        if line.startswith(indent) and _TOP_LEVEL.match(line, len(indent)):
            if not pending_decorator:
                candidates.append(n)
            pending_decorator = line.startswith("@", len(indent))
    starts: list[int] = []
    statement_start: int | None = None
    for first, after in zip(candidates, [*candidates[1:], end]):
        statement_start = first if statement_start is None else statement_start
        if _closes_within("".join(lines[statement_start:after])):
            starts.append(statement_start)
            statement_start = None
    return (indent, starts) if statement_start is None and starts else None


def parse_text(
    text: str,
    path: str,
    encoding: str = "utf-8",
    cache: ParseCache | None = None,
    pythons: ProjectPythons | None = None,
) -> SourceModule:
    """`pythons` tells which Python the file's project requires (asked only when a statement fails)."""
    problems: list[Finding] = []
    if "\0" in text:
        line = text[: text.index("\0")].count("\n")
        problems.append(
            _problem(
                path, DECODE_ERROR, "The file contains NUL bytes; they were read as spaces", line, 0, text
            )
        )
        text = text.replace("\0", " ")
    tree, syntax_problems, skipped = _parse_recovering(text, path, cache, pythons)
    return SourceModule(path, text, tree, problems + syntax_problems, encoding, skipped)


def parse_bytes(data: bytes, path: str, pythons: ProjectPythons | None = None) -> SourceModule:
    text, encoding, problem = decode(data)
    module = parse_text(text, path, encoding, pythons=pythons)
    if problem:
        module.problems.insert(0, _problem(path, DECODE_ERROR, problem, 0, 0, module.text))
    return module
