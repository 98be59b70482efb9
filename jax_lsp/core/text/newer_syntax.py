"""Statements that only a newer Python than the running one can parse.

jax-lsp parses with the Python it runs on, and Python 3.11 fails on the PEP 695 generics and
PEP 701 f-strings that code written for 3.12 uses: those are no syntax errors. `downgrade`
rewrites each construct newer than the running Python into older syntax, keeping every line and
column: `def f[T](x)` becomes `def f   (x)`, `type X = int` becomes `type;X = int`, a new-style
f-string a plain string of the same shape. If the rewritten text parses, the original was valid
newer Python; if it still fails, what remains is a real syntax error.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from jax_lsp.core.text.python_versions import RUNNING, Version


@dataclass(frozen=True)
class Construct:
    line: int  # 0-based, in the text given to `downgrade`
    python: Version  # the oldest Python that parses it
    what: str  # "type parameters (PEP 695)"


@dataclass(frozen=True)
class Downgrade:
    text: str  # the original's lines; a line break inside a rewritten construct gains a `\` before it
    constructs: tuple[Construct, ...]

    @property
    def python(self) -> Version:
        return max(construct.python for construct in self.constructs)


def downgrade(text: str, running: Version = RUNNING) -> Downgrade | None:
    """`text` with every construct newer than `running` rewritten into older syntax.

    None when it has none, or when its strings cannot be told apart from its code."""
    scanner = _Scanner(text)
    try:
        scanner.scan()
    except _Unscannable:
        return None
    code = "".join(scanner.code)
    found: list[tuple[Construct, list[_Edit]]] = []

    def add(start: int, python: Version, what: str, edits: list[_Edit]) -> None:
        if python > running:
            found.append((Construct(_line_of(text, start), python, what), edits))

    for template in scanner.templates:
        if template.python > running and all(_expression_parses(e, running) for e in template.expressions):
            what = "t-string (PEP 750)" if template.t_string else "f-string (PEP 701)"
            add(template.start, template.python, what, [_blank(text, template.start, template.end, '"')])
    if _has_statement_hint(code):  # finding where each statement starts costs more than parsing
        starts = _statement_starts(code)
        for start, end in zip(starts, [*starts[1:], len(code)]):
            _statement(code, text, start, end, running, add)
    if running < (3, 11):
        _star_expressions(code, text, add)
    edits = sorted(edit for _, construct_edits in found for edit in construct_edits)
    kept = [c for c, construct_edits in found if not all(_within(edit, edits) for edit in construct_edits)]
    if not kept:
        return None
    return Downgrade(_apply(text, edits), tuple(kept))


# Edits ------------------------------------------------------------------------------------------
_Edit = tuple[int, int, str]  # (start, end, replacement), the replacement as long, but for `\`s
_Add = Callable[[int, Version, str, list[_Edit]], None]  # records one construct and its edits


def _blank(text: str, start: int, end: int, edge: str) -> _Edit:
    """text[start:end] as spaces between two `edge`s (a quote makes it a plain string), on the
    same lines: each line break inside follows a `\\` that continues the line (or the string)."""
    out = []
    for index in range(start, end):
        char = text[index]
        if char == "\n" and index > start and text[index - 1] == "\r":
            out.append(char)
        elif char in "\r\n":
            out.append("\\" + char)
        else:
            out.append(" ")
    out[0], out[-1] = edge, edge
    return start, end, "".join(out)


def _within(edit: _Edit, edits: list[_Edit]) -> bool:
    """Whether `edit` lies inside another of `edits` (a `*` in the type parameters of a def)."""
    return any(other[0] <= edit[0] and edit[1] <= other[1] and other != edit for other in edits)


def _apply(text: str, edits: list[_Edit]) -> str:
    """`edits`, sorted, applied; one inside another is dropped (the outer one blanks it)."""
    pieces, position = [], 0
    for start, end, replacement in edits:
        if start < position:
            continue
        pieces += [text[position:start], replacement]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _line_of(text: str, position: int) -> int:
    return len(_LINE_BREAK.findall(text, 0, position))


# Statements -------------------------------------------------------------------------------------
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# What the statements `_statement` rewrites start with, each led by a literal (fast to search).
_STATEMENT_HINTS = tuple(
    re.compile(pattern)
    for pattern in (
        r"def[ \t]+\w+[ \t]*\[",
        r"class[ \t]+\w+[ \t]*\[",
        r"type[ \t]+[^\W\d]",
        r"except[ \t]*(?:\*|[^\s(:][^:\r\n]*,)",
    )
)
_TEMPLATE_HINT = re.compile(r"(?<!\w)(?:[fFtT][rR]?|[rR][fFtT])['\"]")


def _has_statement_hint(code: str) -> bool:
    return any(hint.search(code) for hint in _STATEMENT_HINTS)


def might_be_newer(text: str, running: Version = RUNNING) -> bool:
    """A cheap first look: False when `downgrade` would find nothing in `text` (f-strings
    count: any of them may be a new-style one; before 3.11, any `*` may be PEP 646's)."""
    return running < (3, 11) or _has_statement_hint(text) or _TEMPLATE_HINT.search(text) is not None


_LOGICAL_BREAK = re.compile(r"[()\[\]{};]|\\(?:\r\n|\r|\n)|\r\n|\r|\n")
_GENERIC_HEAD = re.compile(r"[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+[^\W\d]\w*[ \t]*(?=\[)")
_TYPE_ALIAS = re.compile(r"[ \t]*type([ \t]+)[^\W\d]\w*[ \t]*(?=[\[=])")
_EXCEPT = re.compile(r"[ \t]*except\b[ \t]*(\*?)")
_ASSIGN = re.compile(r"[ \t]*=(?!=)")
_AS = re.compile(r"\bas\b")
_BRACKET = re.compile(r"[()\[\]{}]")
_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _statement_starts(code: str) -> list[int]:
    """Where each logical line starts (after a line break or `;` outside brackets)."""
    starts, depth = [0], 0
    for match in _LOGICAL_BREAK.finditer(code):
        token = match.group()
        if token in "([{":
            depth += 1
        elif token in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and not token.startswith("\\"):
            starts.append(match.end())
    return starts


def _closing(code: str, opening: int) -> int:
    """The position of the bracket closing the one at `opening`; -1 if none."""
    expected = []
    for match in _BRACKET.finditer(code, opening):
        bracket = match.group()
        if bracket in "([{":
            expected.append(_CLOSER[bracket])
        elif bracket != expected.pop():
            return -1
        if not expected:
            return match.start()
    return -1


def _top_level(code: str, start: int, end: int, char: str) -> list[int]:
    """Where `char` is in code[start:end] outside brackets opened there."""
    found, depth = [], 0
    for index in range(start, end):
        here = code[index]
        if here in "([{":
            depth += 1
        elif here in ")]}":
            depth -= 1
        elif here == char and depth == 0:
            found.append(index)
    return found


def _assignments(code: str, start: int, end: int) -> list[int]:
    """The `=` in code[start:end] outside brackets that are no part of `==`, `<=`, `:=`..."""
    return [
        i
        for i in _top_level(code, start, end, "=")
        if code[i - 1] not in "=<>!:" and code[i + 1 : i + 2] != "="
    ]


_TYPE_PARAMETER_NAME = re.compile(r"\s*(\*{0,2})\s*([^\W\d]\w*)\s*")


def _type_parameters(code: str, text: str, opening: int, running: Version) -> tuple[Version, _Edit] | None:
    """(the Python they need, their rewrite) if the brackets at `opening` hold valid type
    parameters: `T`, `T: bound`, `*Ts`, `**P`, each with a PEP 696 `= default` from 3.13."""
    closing = _closing(code, opening)
    if closing == -1:
        return None
    commas = _top_level(code, opening + 1, closing, ",")
    parameters = list(zip([opening + 1, *(c + 1 for c in commas)], [*commas, closing]))
    if len(parameters) > 1 and not code[parameters[-1][0] : closing].strip():
        parameters.pop()  # a trailing comma
    python = (3, 12)
    for start, end in parameters:
        equals = _assignments(code, start, end)
        colons = _top_level(code, start, equals[0] if equals else end, ":")
        name = _TYPE_PARAMETER_NAME.fullmatch(code, start, (colons or equals or [end])[0])
        if name is None or keyword.iskeyword(name.group(2)) or len(equals) > 1 or len(colons) > 1:
            return None
        if colons and name.group(1):  # `*Ts` and `**P` take no bound
            return None
        if colons and not _expression_parses(text[colons[0] + 1 : equals[0] if equals else end], running):
            return None
        if equals:
            default = text[equals[0] + 1 : end]
            if name.group(1) == "*":
                default = default.replace("*", " ", 1) if default.lstrip().startswith("*") else default
            if not _expression_parses(default, running):
                return None
            python = (3, 13)
    return python, _blank(text, opening, closing + 1, " ")


def _type_parameters_name(python: Version, name: str) -> str:
    return name if python == (3, 12) else "type parameter defaults (PEP 696)"


def _statement(code: str, text: str, start: int, end: int, running: Version, add: _Add) -> None:
    """The constructs that can start the logical line code[start:end]."""
    if match := _GENERIC_HEAD.match(code, start):
        found = _type_parameters(code, text, match.end(), running)
        if found:
            python, edit = found
            add(start, python, _type_parameters_name(python, "type parameters (PEP 695)"), [edit])
    elif match := _TYPE_ALIAS.match(code, start):
        edits, python, after = [(match.start(1), match.start(1) + 1, ";")], (3, 12), match.end()
        if code[after] == "[":
            found = _type_parameters(code, text, after, running)
            if found is None:
                return
            python, blank = found
            edits.append(blank)
            after = blank[1]
        assign = _ASSIGN.match(code, after)
        if assign is None:
            return
        # The value is one expression: `type X = a, b`, `= *a` and `= a = b` are errors.
        value = code[assign.end() : end].strip()
        single = not _top_level(code, assign.end(), end, ",") and not _assignments(code, assign.end(), end)
        if value and not value.startswith("*") and single:
            add(start, python, _type_parameters_name(python, "type alias statement (PEP 695)"), edits)
    elif match := _EXCEPT.match(code, start):
        if match.group(1):
            add(start, (3, 11), "except* (PEP 654)", [(match.start(1), match.end(1), " ")])
        _unparenthesized_except(code, match.end(), start, add)


def _unparenthesized_except(code: str, position: int, start: int, add: _Add) -> None:
    """`except A, B:` (PEP 758) is `except A| B:` to an older Python."""
    commas, depth = [], 0
    for index in range(position, len(code)):
        char = code[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char == ",":
            commas.append(index)
        elif depth == 0 and char in ":\r\n":
            if commas and char == ":" and not _AS.search(code, position, index):
                add(start, (3, 14), "except without parentheses (PEP 758)", [(c, c + 1, "|") for c in commas])
            return


_BRACKET_OR_COMMA = re.compile(r"[()\[\]{},]")
_SUBSCRIPT_STAR = re.compile(r"[\[,][ \t]*(\*)(?!\*)")
_STAR_ANNOTATION = re.compile(r"(?<!\*)\*[ \t]*[^\W\d]\w*[ \t]*:[ \t]*(\*)(?!\*)")


def _star_expressions(code: str, text: str, add: _Add) -> None:
    """PEP 646 (3.11): `tuple[*Ts]` and `*args: *Ts`."""
    for match in _STAR_ANNOTATION.finditer(code):
        add(match.start(), (3, 11), "star annotation (PEP 646)", [(match.start(1), match.end(1), " ")])
    subscripts: list[bool] = []  # per open bracket: is it a `[` that subscripts something
    for match in _BRACKET_OR_COMMA.finditer(code):
        char, index = match.group(), match.start()
        if char in "([{":
            subscripts.append(char == "[" and _subscripts(code, index))
        elif char in ")]}" and subscripts:
            subscripts.pop()
        if char in "[," and subscripts and subscripts[-1]:
            star = _SUBSCRIPT_STAR.match(code, index)
            if star:
                add(index, (3, 11), "star in a subscript (PEP 646)", [(star.start(1), star.end(1), " ")])


def _subscripts(code: str, opening: int) -> bool:
    before = code[:opening].rstrip()
    if not before:
        return False
    if before[-1] in ")]":
        return True
    word = re.search(r"\w+$", before)
    return word is not None and not keyword.iskeyword(word.group()) and not word.group()[0].isdigit()


# Strings ----------------------------------------------------------------------------------------
class _Unscannable(Exception):
    """An unterminated string or a broken f-string: no Python parses it."""


_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_STRING_PREFIXES = {"", "r", "u", "b", "br", "rb", "f", "fr", "rf", "t", "tr", "rt"}
_COMMENT_OR_QUOTE = re.compile(r"""[#'"]""")
_PREFIX_BEFORE = re.compile(r"(?<!\w)([^\W\d]{1,2})\Z")  # a whole name right before a quote: `rb"`, not `xf"`
# After a field's expression: `=`, a conversion, then a format spec or the end.
_SPACE = r"(?:\s|#[^\r\n]*(?![^\r\n]))*"  # a comment runs to the end of its line
_FIELD_TAIL = re.compile(rf"(?:={_SPACE})?(?:![rsa]{_SPACE})?([:}}])")
_PLAIN_STRING_REST = {
    "'": re.compile(r"(?:[^'\\\r\n]|\\(?:\r\n|[\s\S]))*'"),
    '"': re.compile(r'(?:[^"\\\r\n]|\\(?:\r\n|[\s\S]))*"'),
    "'''": re.compile(r"(?:[^'\\]|\\[\s\S]|'(?!''))*'''"),
    '"""': re.compile(r'(?:[^"\\]|\\[\s\S]|"(?!""))*"""'),
}


@dataclass
class _Template:
    """A top-level f-string or t-string."""

    start: int
    t_string: bool
    python: Version = (0, 0)  # (3, 12) with a PEP 701 feature anywhere in it, (3, 14) with a t-string
    end: int = 0
    expressions: list[str] = field(default_factory=list)  # of its own replacement fields

    def needs(self, python: Version) -> None:
        self.python = max(self.python, python)


def _string_at(text: str, pos: int) -> tuple[str, int] | None:
    """(lower-case prefix, position of the quote) if a string literal starts at `pos`."""
    if text[pos] in "'\"":
        return "", pos
    match = _IDENTIFIER.match(text, pos)
    if (
        match
        and text[match.end() : match.end() + 1] in ("'", '"')
        and match.group().lower() in _STRING_PREFIXES
    ):
        return match.group().lower(), match.end()
    return None


def _line_end(text: str, pos: int) -> int:
    match = _LINE_BREAK.search(text, pos)
    return match.start() if match else len(text)


class _Scanner:
    """The comments, strings and f-/t-strings of Python source, by Python 3.12's rules: a
    replacement field may hold the same quotes, backslashes, comments and line breaks."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.code = list(text)  # the text with comments as spaces, strings as `$`s (no Python)
        self.templates: list[_Template] = []

    def scan(self) -> None:
        text, pos = self.text, 0
        while (match := _COMMENT_OR_QUOTE.search(text, pos)) is not None:
            start = match.start()
            if text[start] == "#":
                end = _line_end(text, start)
            else:
                prefix = _PREFIX_BEFORE.search(text, max(pos, start - 3), start)
                if prefix and prefix.group(1).lower() in _STRING_PREFIXES:
                    start = prefix.start(1)
                end = self._string(
                    start, text[start : match.start()].lower(), match.start(), enclosing=(), template=None
                )
            self.code[start:end] = ("$" if text[start] != "#" else " ") * (end - start)
            pos = end

    def _string(
        self, start: int, prefix: str, quote_pos: int, enclosing: tuple[str, ...], template: _Template | None
    ) -> int:
        """The end of the string literal at `start`, inside the replacement fields of strings
        quoted by `enclosing` (of the top-level `template`) if any."""
        text = self.text
        quote = text[quote_pos] * 3 if text.startswith(text[quote_pos] * 3, quote_pos) else text[quote_pos]
        if "f" in prefix or "t" in prefix:
            top = template is None
            if template is None:
                template = _Template(start, "t" in prefix)
                self.templates.append(template)
            if "t" in prefix:
                template.needs((3, 14))
            body = quote_pos + len(quote)
            end = self._template_body(body, quote, "r" in prefix, (*enclosing, quote), template, False)
            if top:
                template.end = end
        else:
            match = _PLAIN_STRING_REST[quote].match(text, quote_pos + len(quote))
            if match is None:
                raise _Unscannable
            end = match.end()
        if (
            template is not None
            and enclosing
            and ("\\" in text[start:end] or any(outer in text[start:end] for outer in enclosing))
        ):
            # Before 3.12 a replacement field held no backslash, and no quote that closes an outer string.
            template.needs((3, 12))
        return end

    def _template_body(
        self, pos: int, quote: str, raw: bool, enclosing: tuple[str, ...], template: _Template, in_spec: bool
    ) -> int:
        """Literal text: after the closing quote; in a format spec, at the `}` closing its field."""
        text, length = self.text, len(self.text)
        while pos < length:
            char = text[pos]
            if text.startswith(quote, pos):
                if in_spec:
                    raise _Unscannable  # a field left open: not even newer Python parses it
                return pos + len(quote)
            if char == "\\":
                if not raw and text.startswith("N{", pos + 1):  # \N{NAME}: the braces are the escape's
                    close = text.find("}", pos)
                    pos = close + 1 if close != -1 else length
                else:
                    pos += 1 if text[pos + 1 : pos + 2] in ("{", "}") else 2
                continue
            if char in "\r\n" and len(quote) == 1:
                raise _Unscannable
            if char == "{":
                if text.startswith("{{", pos) and not in_spec:
                    pos += 2
                else:
                    pos = self._field(pos + 1, quote, enclosing, template)
                continue
            if char == "}":
                if in_spec:
                    return pos
                if not text.startswith("}}", pos):
                    raise _Unscannable  # a single `}`
                pos += 2
                continue
            pos += 1
        raise _Unscannable

    def _field(self, pos: int, quote: str, enclosing: tuple[str, ...], template: _Template) -> int:
        """A replacement field from after its `{`; returns the position after its `}`."""
        text, length = self.text, len(self.text)
        start, depth = pos, 0
        while True:
            if pos >= length:
                raise _Unscannable
            char = text[pos]
            if (string := _string_at(text, pos)) is not None:
                pos = self._string(pos, *string, enclosing=enclosing, template=template)
                continue
            if (name := _IDENTIFIER.match(text, pos)) is not None:
                pos = name.end()
                continue
            if char in "([{":
                depth += 1
            elif char in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif char == "#":
                template.needs((3, 12))
                pos = _line_end(text, pos)
                continue
            elif char == "\\" or (char in "\r\n" and len(quote) == 1):
                template.needs((3, 12))
            elif depth == 0 and (char == ":" or (char == "!" and not text.startswith("!=", pos))):
                break
            elif depth == 0 and char == "=":
                if text.startswith("==", pos):
                    pos += 1
                elif text[pos - 1] not in "<>!=":
                    break  # `{x=}`, which shows the expression's text too
            pos += 1
        if len(enclosing) == 1:
            template.expressions.append(text[start:pos])
        tail = _FIELD_TAIL.match(text, pos)
        if tail is None:
            raise _Unscannable
        if "#" in tail.group() or (len(quote) == 1 and _LINE_BREAK.search(tail.group())):
            template.needs((3, 12))
        if tail.group(1) == ":":
            return self._template_body(tail.end(), quote, False, enclosing, template, True) + 1
        return tail.end()


def _expression_parses(expression: str, running: Version) -> bool:
    """Whether a replacement field's expression is valid (by `running`, or newer syntax).

    Made a tuple, as a field is: a generator needs its own brackets and `*x` is allowed; the
    space keeps a last `\\` from continuing the line."""
    scanner = _Scanner(expression)
    try:
        scanner.scan()
    except _Unscannable:
        return False
    code = "".join(scanner.code).strip()
    source = "(" + expression + (" \n)" if code.endswith(",") or code.startswith("yield") else " \n,)")
    if _parses(source):
        return True
    newer = downgrade(source, running)
    return newer is not None and _parses(newer.text)


def _parses(expression: str) -> bool:
    try:
        ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
