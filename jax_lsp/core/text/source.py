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
import functools
import io
import re
from collections.abc import Sequence

from jax_lsp.core.codes import CODES, DECODE_ERROR, SYNTAX_ERROR
from jax_lsp.core.findings import Finding, Located, Position, Span
from jax_lsp.core.record import Record
from jax_lsp.core.text.chunks import (
    at_line,
    body_statements,
    class_body,
    holds_line,
    parse_at_line,
    parse_in_a_class,
    statement_chunks,
)
from jax_lsp.core.text.decoding import decode, split_lines
from jax_lsp.core.text.python_versions import RUNNING, SkippedStatement
from jax_lsp.core.text.triggers import site_lines, trigger_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.text.newer_syntax import Construct
    from jax_lsp.core.text.python_versions import ProjectPythons


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
        # Lines worth walking for calls: triggers, tags and the lines naming a marked name. The
        # site lines leave out the tags and the names that only a tag's statement marked: a
        # partial parse keeps (and the module parses in its turn) a definition that holds one.
        self._marker_lines: Sequence[int] | None = None
        self._site_lines: Sequence[int] | None = None
        self._marked_names: set[str] = set()
        self._site_marked_names: set[str] = set()

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    def _triggers(self) -> Sequence[int]:
        if self._marker_lines is None:
            self._marker_lines = trigger_lines(self.text)
        return self._marker_lines

    def _sites(self) -> Sequence[int]:
        if self._site_lines is None:
            self._site_lines = site_lines(self.text)
        return self._site_lines

    def mark_name(self, name: str, statement: Located) -> None:
        """Treat `name` as a trigger too: `statement`, which holds one, bound it to something
        (`ds = jax.checkpoint_policies.dots_saveable`), so lines using it may hold a site. A name
        bound by a statement that holds only a tag (`from jax.ad_checkpoint import checkpoint_name`)
        marks lines to walk, not lines that hold a site."""
        marker_lines = self._triggers()
        site = holds_line(self._sites(), statement.lineno, statement.end_lineno or statement.lineno)
        if name in self._marked_names and (name in self._site_marked_names or not site):
            return  # bound again (`f = ...` in each branch of an `elif` chain)
        more = self._lines_naming(name)
        if name not in self._marked_names:
            self._marked_names.add(name)
            self._marker_lines = sorted(more.union(marker_lines))
        if site:
            self._site_marked_names.add(name)
            self._site_lines = sorted(more.union(self._sites()))

    def _lines_naming(self, name: str) -> set[int]:
        """The 1-based lines where `name` stands as a whole word."""
        text, found, line, counted = self.text, set(), 1, 0
        position = text.find(name)
        while position != -1:
            before = text[position - 1] if position else " "
            after = text[position + len(name) : position + len(name) + 1] or " "
            if not (_is_name_char(before) or _is_name_char(after)):
                line += text.count("\n", counted, position)
                counted = position
                found.add(line)
            position = text.find(name, position + len(name))
        return found

    def could_hold_site(self, node: Located) -> bool:
        """Whether the lines of `node` hold a trigger (triggers.py), a tag or a marked name."""
        return holds_line(self._triggers(), node.lineno, node.end_lineno or node.lineno)

    def holds_site_line(self, node: Located) -> bool:
        """Whether the lines of `node` hold a trigger or a name marked by one: tags left out."""
        return holds_line(self._sites(), node.lineno, node.end_lineno or node.lineno)

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


def _is_name_char(char: str) -> bool:
    return char.isidentifier() or char.isdigit()


def _problem(path: str, code: str, message: str, line: int, column: int, text: str) -> Finding:
    lines = [l.rstrip("\r\n") for l in split_lines(text)]
    line = min(max(line, 0), len(lines) - 1)
    column = min(max(column, 0), len(lines[line]))
    span = Span.of(line, column, line, len(lines[line]))
    return Finding(path, code, CODES[code].severity, message, span)


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
        # The statements of large classes, by first line: (their text, their parse).
        self._members: dict[int, tuple[str, list[ast.stmt]]] = {}

    def parse(self, text: str, path: str) -> tuple[list[ast.stmt], list[ChunkError]]:
        """(the statements that parsed, why the others did not)."""
        lines = split_lines(text)
        kept: dict[tuple[int, str], list[ast.stmt] | ChunkError] = {}
        members: dict[int, tuple[str, list[ast.stmt]]] = {}
        body: list[ast.stmt] = []
        failures: list[ChunkError] = []
        for start, end in statement_chunks(lines):
            key = (start, "".join(lines[start:end]))
            parsed = self._statements.get(key)
            if parsed is not None and end - start >= LARGE_CLASS_LINES:
                # An unchanged class keeps its statements' parses for the next edit inside it.
                members.update((n, self._members[n]) for n in range(start, end) if n in self._members)
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
        self, lines: list[str], start: int, end: int, path: str, kept: dict[int, tuple[str, list[ast.stmt]]]
    ) -> list[ast.stmt] | None:
        """A large class parsed statement by statement of its body, each parsed again only if
        its text or first line changed: an edit inside one method costs that method. None when
        the class is not laid out plainly, or a statement does not parse alone (the caller then
        parses the class whole, and reports any error as before)."""
        header = next(n for n in range(start, end) if not lines[n].startswith("@"))
        body = body_statements(lines, header, end) if lines[header].startswith("class") else None
        if body is None:
            return None
        indent, body_starts = body
        try:
            shell = parse_at_line("".join(lines[start : header + 1]) + indent + "pass\n", path, start)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        node = shell.body[0] if len(shell.body) == 1 else None
        if not isinstance(node, ast.ClassDef):
            return None
        node.body = []
        for first, after in zip(body_starts, [*body_starts[1:], end]):
            text = "".join(lines[first:after])
            earlier = self._members.get(first)
            if earlier is not None and earlier[0] == text:
                statements = earlier[1]
            else:
                try:
                    statements = class_body(parse_in_a_class(text, path, first))
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return None
            kept[first] = (text, statements)
            node.body += statements
        if not node.body:
            return None
        node.end_lineno, node.end_col_offset = node.body[-1].end_lineno, node.body[-1].end_col_offset
        return [node]


def _parse_chunk(chunk: str, path: str, start: int) -> list[ast.stmt] | ChunkError:
    """The statements of `chunk`, numbered as if it started at 0-based line `start`."""
    try:
        return parse_at_line(chunk, path, start).body
    except SyntaxError as exc:
        return _chunk_error(chunk, path, start, exc)
    except (ValueError, RecursionError, MemoryError) as exc:
        return ChunkError(SyntaxError(str(exc)), False, start, chunk)


def _chunk_error(chunk: str, path: str, start: int, error: SyntaxError) -> ChunkError:
    from jax_lsp.core.text.newer_syntax import (
        downgrade,  # here: a file that parses never needs it (start-up time)
    )

    newer = downgrade(chunk)
    if newer is not None:
        try:
            ast.parse(at_line(newer.text, start), filename=path)
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
