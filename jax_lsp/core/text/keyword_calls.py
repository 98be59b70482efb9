"""What a file's text says of a call that passes a keyword, without parsing: the callee, and
where a name the file calls comes from. The text is read with its strings and comments blanked
(`code`), so that a word in a docstring or a bracket in a string reads as nothing; every answer
is None (or False) wherever the text could be read otherwise, and the caller parses the file.
"""

from __future__ import annotations

import functools
import re

from jax_lsp.core.text.chunks import STRING_OR_COMMENT_TEXT, brackets_pair

_STRING_OR_COMMENT = re.compile(STRING_OR_COMMENT_TEXT.encode(), re.S)
_BLANK = bytes(byte if byte in b"\r\n" else ord(" ") for byte in range(256))
_DOTTED_BEFORE = re.compile(rb"(?:[A-Za-z_]\w*[ \t]*\.[ \t]*)*[A-Za-z_]\w*[ \t]*\Z")
_DEFINED_BEFORE = re.compile(rb"(?:^|[;:\s])(?:def|class)\s+\Z")
# `from X import a, b` on one line, or `from X import (a,\n b)`; the module and the names.
# At the start of a line (searched for after a line break: a literal first is found many times faster).
_FROM_IMPORT = re.compile(rb"\nfrom[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\r\n;]*)")
_IMPORTED_NAME = re.compile(rb"\s*([A-Za-z_]\w*)(?:\s+as\s+([A-Za-z_]\w*))?\s*\Z")
_CALLED = re.compile(rb"[ \t]*\(")
_IDENTIFIER_BYTE = re.compile(rb"[\w\x80-\xff]")
_ATTRIBUTE_DOT = re.compile(rb"\.[ \t]*\Z")
_TOP_LEVEL_DEF = re.compile(rb"(?:async[ \t]+)?def[ \t]+")
# Text that binds a name in ways a blanked text hides or these readers do not follow: an
# assignment expression (one may sit in an f-string), a star import.
_UNFOLLOWED = (b":=", b"import *", b"import*")


def blanked(data: bytes) -> bytes | None:
    """`data` with every string and comment turned to spaces (line breaks kept, so offsets and
    lines stay); None when a quote is left over (a string this reading cannot pair)."""
    code = _STRING_OR_COMMENT.sub(lambda match: match.group(0).translate(_BLANK), data)
    return None if b'"' in code or b"'" in code else code


# What `callees` says of a keyword that no call's parentheses hold: at no bracket (an assignment
# `policy = ...`), or in the parameters of a `def` or `class`.
NO_CALL = b""
_BRACKET = re.compile(rb"[()\[\]{}]")
_PAIRS = frozenset(b")]}")
WINDOW = 4000  # bytes above a keyword in which the call holding it is looked for


def callees(code: bytes, keywords: list[int]) -> list[bytes | None] | None:
    """For each keyword at an offset in `keywords` of `code`, the dotted callee of the call
    whose parentheses hold it (`auto_remat` for `auto_remat(Block, policy=...)`), NO_CALL, or
    None where it cannot be told (the innermost bracket around it is a subscript's or a
    literal's, the callee no dotted name, or the call began too far above to look for). None
    for all when the brackets of `code` do not pair."""
    if not brackets_pair(code):
        return None
    return [_callee_around(code, offset) for offset in keywords]


def _callee_around(code: bytes, offset: int) -> bytes | None:
    """`callees` of one keyword: its innermost open bracket is looked for in the WINDOW bytes
    above it, and, when none is open there, the keyword is at no bracket if none is open at all."""
    start = max(0, offset - WINDOW)
    depth = 0
    for bracket in reversed([match.start() for match in _BRACKET.finditer(code, start, offset)]):
        if code[bracket] in _PAIRS:
            depth += 1
        elif depth:
            depth -= 1
        else:
            return _callee(code, bracket)
    return NO_CALL if start == 0 or brackets_pair(code[:start]) else None


def _callee(code: bytes, opener: int) -> bytes | None:
    """The dotted name called by the parenthesis at `opener` (NO_CALL for a `def`'s or
    `class`'s), None when it is no call of one."""
    if code[opener] != ord("("):
        return None
    callee = _DOTTED_BEFORE.search(code, max(0, opener - 200), opener)
    if callee is None or (callee.start() and _IDENTIFIER_BYTE.match(code, callee.start() - 1)):
        return None
    if _DEFINED_BEFORE.search(code, max(0, callee.start() - 20), callee.start()):
        return NO_CALL
    return re.sub(rb"\s", b"", callee.group(0))


def _uses(code: bytes, name: bytes) -> list[int]:
    """The offsets of `name` as a whole word in `code`, but as an attribute (`x.name`)."""
    found = []
    at = code.find(name)
    while at >= 0:
        end = at + len(name)
        if not (
            (at and _IDENTIFIER_BYTE.match(code, at - 1))
            or _IDENTIFIER_BYTE.match(code, end)
            or _ATTRIBUTE_DOT.search(code, max(0, at - 40), at)
        ):
            found.append(at)
        at = code.find(name, end)
    return found


def imported_from(code: bytes, name: bytes) -> bytes | None:
    """The module `X` of the one `from X import name` at the top level (a line's start) that
    binds `name` in `code`, when every other use of `name` there is a call of it: nothing else
    in the file can make it another thing (a parameter, an assignment, a loop variable). None
    otherwise, and for a relative import."""
    if any(text in code for text in _UNFOLLOWED):
        return None
    module = None
    bound_at = -1
    for statement in _FROM_IMPORT.finditer(b"\n" + code):  # offsets one past `code`'s
        names = statement.group(2).strip(b"()")
        if b"\\" in names:
            return None
        for clause in names.split(b","):
            imported = _IMPORTED_NAME.match(clause)
            if imported is None:
                if clause.strip():
                    return None
                continue
            original, alias = imported.group(1), imported.group(2)
            if (alias or original) != name:
                continue
            if module is not None or original != name:
                return None
            module, bound_at = statement.group(1), statement.start(2) - 1
    if module is None or module.startswith(b"."):
        return None
    if not all(_in_clause(code, bound_at, use) or _called(code, use, name) for use in _uses(code, name)):
        return None
    return module


def _in_clause(code: bytes, start: int, at: int) -> bool:
    """Whether `at` lies in the import clause starting at `start` (parenthesized, or one line)."""
    if at < start:
        return False
    end = code.find(b")", start) if code.startswith(b"(", start) else code.find(b"\n", start)
    return at < (end if end >= 0 else len(code))


def _called(code: bytes, at: int, name: bytes) -> bool:
    """Whether the use of `name` at `at` is a call of it (`name(`), not a `def` or `class`."""
    return bool(_CALLED.match(code, at + len(name))) and not _DEFINED_BEFORE.search(code, max(0, at - 20), at)


# Asked of the module that defines a callee once for each file calling it (easydel's `utils.py`,
# for 72 files): a text's hash is kept by the bytes object, read once in a batch.
@functools.lru_cache(maxsize=64)
def defines(data: bytes, name: bytes) -> bool:
    """Whether the module of text `data` binds `name` at its top level by `def` alone: each use
    of the name is a `def name(` at the start of a line, or a call of it."""
    code = blanked(data)
    if code is None or any(text in code for text in _UNFOLLOWED):
        return False
    defined = False
    for use in _uses(code, name):
        header = _TOP_LEVEL_DEF.match(code, code.rfind(b"\n", 0, use) + 1)
        if header is not None and header.end() == use:
            defined = True
        elif not _called(code, use, name):
            return False
    return defined
