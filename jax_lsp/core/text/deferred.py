"""Definitions left unparsed: a top-level `def` or `class`, or a method of a large class, whose
lines hold no trigger word is kept as text and parsed only when its name is looked up."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from jax_lsp.core.record import Record
from jax_lsp.core.text.chunks import (
    body_statements,
    class_body,
    closes_within,
    holds_line,
    in_a_class,
    statement_chunks,
)
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.core.text.source import SourceModule, parse_text
from jax_lsp.core.text.triggers import site_lines, trigger_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.text.python_versions import ProjectPythons

# The line of a top-level `def` or `class`, and the name it binds.
_DEFINITION = re.compile(r"(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)")


# The line of a method (after its indentation), and the name it binds. Compiled at its first use
# (re keeps it): only a class holding a site or a tag has its methods read.
_METHOD = r"(?:async[ \t]+def|def)[ \t]+([A-Za-z_]\w*)"


# A statement holding one may bind a name in an unusual place (a walrus in a decorator).
_WALRUS = ":="


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
        parsed = parse_text(in_a_class(self.text, self.start), path, pythons=pythons)
        parsed.skipped = [
            s.replace(line=self.start) if s.line == self.start - 1 else s for s in parsed.skipped
        ]
        return parsed

    def names(self, word: str) -> bool:
        """Whether `word` stands in its text as a whole word."""
        return word in self.text and re.search(rf"(?<!\w){re.escape(word)}(?!\w)", self.text) is not None

    def statements(self, parsed: SourceModule) -> list[ast.stmt]:
        """What `parse` gave of it: a method's statements are those of its class of its own."""
        return parsed.tree.body if self.owner is None else class_body(parsed.tree)


def _definition_line(lines: list[str], start: int, end: int, indent: int = 0) -> int:
    """The line of lines[start:end] (decorators, then a statement, all indented by `indent`)
    after the decorators: the `def` or `class` line, if the statement is one. A decorator over
    several lines (`@parameterized.parameters(` and a line per case, as tests write them) ends
    where it closes what it opens."""
    line = start
    while line < end and lines[line].startswith("@", indent):
        after = line + 1
        while after < end and not closes_within("".join(lines[line:after])):
            after += 1
        line = after
    return min(line, end - 1)


def parse_for_sites(text: str, path: str) -> tuple[ast.Module, list[DeferredDefinition]] | None:
    """The top-level statements of `text` that finding its policy sites needs, and the `def`s
    and `class`es left for later; None when none is left (the caller parses the file whole),
    or when the rest does not parse.

    A `def` or `class` is left out when no line of it holds a trigger (triggers.py `site_lines`:
    a tag is none): the scope builder would walk it for no site or checked call, and only its
    name binds at module level; of a class holding one (or a tag), the methods that hold none
    are. It is left
    out only when it, and all above it, close every string and bracket they open, so that it
    surely starts a statement; its lines are parsed as blank."""
    if "\0" in text:
        return None
    triggers = site_lines(text)
    lines = split_lines(text)
    kept = list(lines)
    deferred: list[DeferredDefinition] = []
    checked_to = 0  # the lines above this one are whole statements
    for start, end in statement_chunks(lines):
        header = _definition_line(lines, start, end)
        binds = _DEFINITION.match(lines[header])  # most chunks are no `def` or `class`
        if binds is None:
            continue
        chunk = "".join(lines[start:end])
        if not chunk.isascii() or _WALRUS in chunk:
            continue
        name = binds.group(1)
        whole = not holds_line(triggers, start + 1, end)
        is_class = lines[header].startswith("class")
        if not (whole or is_class) or not closes_within("".join(lines[checked_to:start])):
            continue
        found = []
        # A class holding a site has its methods without one left out, and so has a class
        # holding a tag (the names index then parses only the methods that hold one). Each
        # member is checked (body_statements): of the rest, only its decorators are not.
        tagged = whole and is_class and holds_line(trigger_lines(text), start + 1, end)
        if (tagged or not whole) and closes_within("".join(lines[start:header])):
            found = _methods(lines, header, end, triggers)
        if not found and whole and closes_within(chunk):
            found = [DeferredDefinition(name, start, end, chunk)]
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
    body = body_statements(lines, header, end)
    if body is None:
        return []
    indent, starts = body
    methods = []
    method_line = re.compile(_METHOD)
    for first, after in zip(starts, [*starts[1:], end]):  # each closes what it opens
        method = method_line.match(lines[_definition_line(lines, first, after, len(indent))], len(indent))
        if method is not None and not holds_line(triggers, first + 1, after):
            member = "".join(lines[first:after])
            methods.append(DeferredDefinition(method.group(1), first, after, member, owner=header + 1))
    return methods if len(methods) < len(starts) else methods[:-1]
