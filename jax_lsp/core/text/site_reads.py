"""Which statements of a file its policy sites can read, from its text alone: the users search
(engine.users) asks whether a file's sites could reach what it imports from the named modules
before the file is parsed.

A site's policy value is followed (core/policies/resolve.py) through the names written in its
own statement to the module-level names they lead to: a top-level `def` or `class` by its name,
a name assigned at module level (in an `if` or `try` too) by that statement, a class body by the
class's name (`Cls.attr`). A method sees its module and not its class's names, so each member
of a class is a statement of its own; a member holding a site may read its class's own
statements (a decorator does), so those come with it. The statements a file's sites can read are
the closure of those that hold a site trigger over the names they write. The closure
over-approximates (every word is taken for a name), never under: a file whose closure writes no
reference to the named modules cannot use their policies. Import statements are left out: what
they bind is what the references name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set

from jax_lsp.core.text.chunks import (
    body_statements,
    closes_within,
    holds_line,
    statement_chunks,
    without_comments,
)
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.core.text.triggers import site_trigger_lines

_WORD = re.compile(r"[^\W\d]\w*")
_ASCII_WORD = re.compile(r"[A-Za-z_]\w*", re.ASCII)  # _WORD on ASCII text, about twice as fast
# `a.b`, one pair at a time (`a.b.c` gives a.b, then b.c).
_ATTRIBUTE = re.compile(r"([^\W\d]\w*)[ \t]*\.[ \t]*(?=([^\W\d]\w*))")
_IMPORT = re.compile(r"[ \t]*(?:from|import)\b")
_DEFINITION_START = re.compile(r"[ \t]*(?:@|(?:async[ \t]+)?def\b|class\b)")
# The line of a `def` or `class` (after decorators), and the name it binds.
_HEADER = re.compile(r"(?m)^(?:async[ \t]+)?(def|class)[ \t]+([^\W\d]\w*)")
# What a statement may bind where the resolver follows it (`name = value`, `name: T = value`,
# a `def` or `class`), at any indentation: inside an `if` or `try` it is still the module's.
_BINDS = re.compile(r"(?m)^[ \t]*(?:(?:async[ \t]+)?(?:def|class)[ \t]+)?([^\W\d]\w*)[ \t]*(?:[:=(]|$)")


class _Statement:
    """Lines [start, end) of a statement and its text; the names it binds for its module (none
    for a member of a class); whether it is a `def` or `class`; the class it is a member of,
    and the members of a class (split only where a site is; filled as they are found)."""

    __slots__ = ("start", "end", "text", "binds", "definition", "owner", "members")

    def __init__(self, start: int, end: int, text: str, binds: frozenset[str], owner: int | None) -> None:
        self.start, self.end, self.text, self.binds, self.owner = start, end, text, binds, owner
        self.definition = bool(_DEFINITION_START.match(text))
        self.members: list[int] = []


def _statements(lines: list[str], seed_lines: list[int]) -> list[_Statement]:
    """The file's statements but imports; a class that holds one of `seed_lines` split into
    its header and members. Not checked to close what they open: see sites_could_read."""
    found: list[_Statement] = []
    for start, end in statement_chunks(lines):
        if _IMPORT.match(lines[start]):
            continue
        text = "".join(lines[start:end])
        header = _HEADER.search(text) if _DEFINITION_START.match(text) else None
        if header is None:
            found.append(_Statement(start, end, text, frozenset(_BINDS.findall(text)), None))
            continue
        name = frozenset([header.group(2)])
        header_line = start + text.count("\n", 0, header.start())
        split = header.group(1) == "class" and holds_line(seed_lines, start + 1, end)
        body = body_statements(lines, header_line, end) if split else None
        if body is None:
            found.append(_Statement(start, end, text, name, None))
            continue
        owner = len(found)  # the class's decorators and header line, then each member
        found.append(_Statement(start, header_line + 1, "".join(lines[start : header_line + 1]), name, None))
        firsts = body[1]
        for first, after in zip(firsts, [*firsts[1:], end]):
            found[owner].members.append(len(found))
            found.append(_Statement(first, after, "".join(lines[first:after]), frozenset(), owner))
    return found


def sites_could_read(data: bytes, names: Set[str], attributes: Mapping[str, Set[str]]) -> bool:
    """Whether a statement that the policy sites of `data` (a file's code) can read writes one of `names`, or
    `module.attribute` for a module and one of its attributes in `attributes`; True also when
    one of those statements may be cut inside a string or brackets (a line in a string may
    look like a statement's first), unless the text writes none of them anywhere."""
    text = data.decode("utf-8", "replace")
    if not _could_write(text, names, attributes):
        return False  # no statement can: the file's statements are not even cut
    trigger_lines, aliases = site_trigger_lines(data)
    seed_lines = set(trigger_lines)
    if aliases:  # a call of an alias may pass a policy positionally, and holds no trigger
        called = "|".join(re.escape(alias.decode("utf-8", "replace")) for alias in sorted(aliases))
        seed_lines.update(
            text.count("\n", 0, m.start()) + 1 for m in re.finditer(rf"\b(?:{called})[ \t]*\(", text)
        )
    # A comment's own line names nothing (a notebook's markdown, as jupytext writes it).
    lines = ["\n" if "#" in line and line.lstrip().startswith("#") else line for line in split_lines(text)]
    statements = _statements(lines, sorted(seed_lines))
    binding: dict[str, list[int]] = {}
    for index, statement in enumerate(statements):
        for name in statement.binds:
            binding.setdefault(name, []).append(index)
    ordered = sorted(seed_lines)
    todo = [index for index, s in enumerate(statements) if holds_line(ordered, s.start + 1, s.end)]
    included: set[int] = set()
    words: set[str] = set()
    while todo:
        index = todo.pop()
        if index in included:
            continue
        included.add(index)
        statement = statements[index]
        if statement.owner is None and not closes_within(statement.text):  # a member closes (body_statements)
            return True
        code = without_comments(statement.text)
        written = set((_ASCII_WORD if code.isascii() else _WORD).findall(code))
        if not names.isdisjoint(written) or _writes_attribute(code, written, attributes):
            return True
        todo += statement.members  # a class named (`Cls.attr`), or its decorator holds a site
        if statement.owner is not None:  # the class's own statements, which a member may read
            todo += [m for m in statements[statement.owner].members if not statements[m].definition]
        for word in written - words:
            words.add(word)
            todo += binding.get(word, ())
    return False


def _could_write(text: str, names: Set[str], attributes: Mapping[str, Set[str]]) -> bool:
    """Whether `text` holds one of `names`, or a module of `attributes` followed by a dot and
    one of its attributes, anywhere: what a statement writes is in the text. Most files that
    import a module whole never write the few attributes it re-exports of another."""
    if any(name in text for name in names):
        return True
    return any(
        module in text
        and _mentions_one_of(modules_attributes, text)
        and not modules_attributes.isdisjoint(
            re.findall(rf"{re.escape(module)}[ \t]*\.[ \t]*(?=([^\W\d]\w*))", text)
        )
        for module, modules_attributes in attributes.items()
    )


# A search of the text for each attribute is cheaper than listing every `module.attribute` it
# writes, for this many attributes at most (a module of a package that re-exports a few).
_FEW_ATTRIBUTES = 8


def _mentions_one_of(attributes: Set[str], text: str) -> bool:
    """False when `text` holds none of a few `attributes`, else True (a pretest only)."""
    return len(attributes) > _FEW_ATTRIBUTES or any(attribute in text for attribute in attributes)


def _writes_attribute(code: str, written: set[str], attributes: Mapping[str, Set[str]]) -> bool:
    if not any(module in written and not names.isdisjoint(written) for module, names in attributes.items()):
        return False  # no module written with one of its attributes: no pair to look for
    return any(match.group(2) in attributes.get(match.group(1), ()) for match in _ATTRIBUTE.finditer(code))
