"""Editor help for checkpoint names: completion inside the names a policy factory or a
`checkpoint_name` call is given, the tags a name string leads to, every place that names it,
and a description of it for hover."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jax_lsp.core.findings import Position, Span
from jax_lsp.core.tags.tags import (
    KEYWORD_ROLES,
    NAME_FACTORIES,
    POSITIONAL_ROLES,
    TAG_FUNCTION,
    NameUse,
    Place,
    Tag,
    callee_names,
)
from jax_lsp.core.text.decoding import split_lines

if TYPE_CHECKING:
    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.tags.index import NameIndex


class Workspace(Protocol):
    """What names help reads: modules, file bytes and the names index."""

    def load(self, path: Path | str, only_if_site: bool = False) -> Module | None: ...

    def read(self, path: Path | str) -> bytes | None: ...

    def checkpoint_names(self) -> NameIndex: ...


_STATEMENT_START = re.compile(r"[A-Za-z_@]")
_CALLEE = re.compile(r"([A-Za-z_][\w.]*)\s*$")
_KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")
_PREFIX = re.compile(r"([A-Za-z]{0,2})$")
LOOK_BACK_LINES = 400


@dataclass(frozen=True)
class Completion:
    names: tuple[tuple[str, str], ...]  # (name, where it is tagged or used)
    span: Span  # the part of the string the chosen name replaces (typed so far)


@dataclass(frozen=True)
class NameDescription:
    name: str
    span: Span  # the string hovered
    lines: tuple[str, ...]

    def markdown(self) -> str:
        return "\n".join(self.lines)


# Where the cursor is ------------------------------------------------------------------------
@dataclass
class _Frame:
    bracket: str
    callee: str | None  # the last name before `(`, e.g. "save_only_these_names"
    arg_start: int  # offset in the lexed text where the current argument starts


def _string_at(text: str, cursor: int) -> tuple[list[_Frame], int] | None:
    """The open brackets around a string that holds `cursor`, and where its content starts;
    None when `cursor` is not inside a plain (not f-) string."""
    frames: list[_Frame] = []
    i = 0
    while i < cursor:
        char = text[i]
        if char == "#":
            line_end = text.find("\n", i)
            if line_end == -1 or line_end >= cursor:
                return None
            i = line_end + 1
        elif char in "\"'":
            letters = _PREFIX.search(text, 0, i)
            assert letters is not None  # the pattern matches the empty string
            prefix = letters.group(1).lower()
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else char
            start = i + len(quote)
            end = _string_end(text, start, quote, "r" in prefix)
            if end is None:  # not closed before the cursor: the cursor is in this string
                return (frames, start) if "f" not in prefix else None
            i = end
        elif char in "([{":
            callee = _CALLEE.search(text, 0, i) if char == "(" else None
            frames.append(_Frame(char, callee.group(1).rsplit(".", 1)[-1] if callee else None, i + 1))
            i += 1
        elif char in ")]}":
            if frames:
                frames.pop()
            i += 1
        elif char == "," and frames:
            frames[-1].arg_start = i + 1
            i += 1
        else:
            i += 1
    return None


def _string_end(text: str, start: int, quote: str, raw: bool) -> int | None:
    """The offset after the closing quote (a one-line string left open ends with its line);
    None when the text ends inside the string."""
    i = start
    while i < len(text):
        if text[i] == "\\" and not raw:
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        if text[i] == "\n" and len(quote) == 1:
            return i
        i += 1
    return None


def _context(workspace: Workspace, path: str, text: str, frames: list[_Frame]) -> str | None:
    """ "use" in the names of a factory of names, "tag" in a `checkpoint_name` call, else None."""
    module = workspace.load(path)
    tag_callees = callee_names(module, [TAG_FUNCTION]) if module else {TAG_FUNCTION}
    factories = callee_names(module, NAME_FACTORIES) if module else set(NAME_FACTORIES)
    if not frames:
        return None
    inner = frames[-1]
    if inner.bracket == "(" and inner.callee in tag_callees:
        return "tag"
    call = inner if inner.bracket == "(" and inner.callee else frames[-2] if len(frames) > 1 else None
    if call is None or call.bracket != "(" or call.callee not in factories:
        return None
    keyword = _KEYWORD.match(text, call.arg_start)
    if keyword is None:
        return "use" if call.callee in POSITIONAL_ROLES or call.callee not in KEYWORD_ROLES else None
    roles = {k for r in KEYWORD_ROLES.values() for k in r}
    return "use" if keyword.group(1) in roles else None


def complete(workspace: Workspace, path: str, position: Position) -> Completion | None:
    """The known names, when `position` is inside a name string of a factory of names (the tags'
    names) or of a `checkpoint_name` call (those and the names policies give)."""
    path = os.path.abspath(path)
    data = workspace.read(path)
    if data is None:
        return None
    lines = split_lines(data.decode("utf-8", "replace"))
    if position.line >= len(lines):
        return None
    first = position.line
    while first > 0 and position.line - first < LOOK_BACK_LINES and not _STATEMENT_START.match(lines[first]):
        first -= 1
    text = "".join(lines[first : position.line]) + lines[position.line][: position.column]
    found = _string_at(text, len(text))
    if found is None:
        return None
    frames, start = found
    typed = text[start:]
    if "\n" in typed:
        return None
    context = _context(workspace, path, text, frames)
    if context is None:
        return None
    index = workspace.checkpoint_names()
    tags = index.tags()
    names: dict[str, str] = {}
    for name in tags.names():
        names[name] = "tagged at " + _where(tags.places(name)[0].place)
    if context == "tag":
        for use in index.uses():
            names.setdefault(use.name, f"{use.factory} at {_where(use.call)}")
    span = Span.of(position.line, position.column - len(typed), position.line, position.column)
    return Completion(tuple(sorted(names.items())), span)


# What a name string leads to ------------------------------------------------------------------
def _name_at(workspace: Workspace, path: str, position: Position) -> tuple[str, Place] | None:
    return workspace.checkpoint_names().name_at(os.path.abspath(path), position)


def definitions(workspace: Workspace, path: str, position: Position) -> list[Place]:
    """The tags that carry the name written at `position`."""
    found = _name_at(workspace, path, position)
    if found is None:
        return []
    return sorted({tag.place for tag in workspace.checkpoint_names().tags().places(found[0])})


def references(workspace: Workspace, path: str, position: Position, with_tags: bool = True) -> list[Place]:
    """Every tag that carries the name at `position` (with `with_tags`) and every name string
    a policy factory is given with it."""
    found = _name_at(workspace, path, position)
    if found is None:
        return []
    index = workspace.checkpoint_names()
    places = {use.place for use in index.uses() if use.name == found[0]}
    if with_tags:
        places |= {tag.place for tag in index.tags().places(found[0])}
    return sorted(places)


def describe(workspace: Workspace, path: str, position: Position) -> NameDescription | None:
    """Where the name at `position` is tagged, and which policies save, offload or exclude it."""
    found = _name_at(workspace, path, position)
    if found is None:
        return None
    name, place = found
    index = workspace.checkpoint_names()
    tags = index.tags().places(name)
    lines = [f'**Checkpoint name `"{name}"`**', ""]
    if tags:
        lines.append("Tagged by `checkpoint_name` at:")
        lines += [f"- {_tag_line(tag)}" for tag in tags]
    else:
        lines.append(
            "No `checkpoint_name` tag in reach carries it: a policy naming it does nothing (JAX112)."
        )
    uses = [use for use in index.uses() if use.name == name]
    for role, verb in (("save", "Saved"), ("offload", "Offloaded"), ("exclude", "Excluded")):
        chosen = [use for use in uses if use.role == role]
        if chosen:
            lines += ["", f"{verb} by:"]
            lines += [f"- `{use.factory}` at {_where(use.call)}" for use in _unique_calls(chosen)]
    return NameDescription(name, place.span, tuple(lines))


def _unique_calls(uses: list[NameUse]) -> list[NameUse]:
    seen, found = set(), []
    for use in sorted(uses, key=lambda u: u.call):
        if use.call not in seen:
            seen.add(use.call)
            found.append(use)
    return found


def _tag_line(tag: Tag) -> str:
    line = _where(tag.place)
    if tag.shape is not None:
        line += f" (`{tag.text}`: every name of that shape)"
    if tag.via:
        line += f", through {tag.via}"
    return line


def _where(place: Place) -> str:
    return f"{os.path.basename(place.path)}:{place.span.start.line + 1}"
