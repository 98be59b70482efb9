"""Which files are worth parsing: a byte search for the words that no policy site, and no call a
rule checks anywhere, can be written without.

A file is parsed only if it holds one of: a `policy=` keyword; a call of a checkpoint function,
which may take its policy positionally, a `functools.partial` of one (JAX117 checks its
`static_argnums`), or an alias of one (`ckpt = jax.checkpoint`,
`from jax import checkpoint as c`); the names of the ready-made policies and of the offloading
API, which JAX105 and JAX106 check anywhere; the factories of names, whose names JAX112 checks
anywhere. Each is matched as a whole identifier, and a ready-made name right after a quote is a
docstring's (`"nothing_saveable"`): real ML code says "checkpoint" everywhere (`save_checkpoint(`,
`import orbax.checkpoint as ocp`, prose), and such files are not worth parsing. Nor is an
identifier right after another word and blanks on its line code, unless that word is a keyword
(`return checkpoint(f)`): two names in a row are prose (`an Orbax checkpoint (e.g. ...)`, `Loading
checkpoint(s)`), or a syntax error.

A plain search for each word, then a look at the identifier holding it, is many times faster
than one regular expression with look-behinds over the whole file.

A notebook's JSON is searched as it is, its cells' line breaks and tabs escaped: an escape
(`\\n`, `\\r`, `\\t`) ends the identifier before it, and `\\n` or the string's closing quote
ends a line. In a Python file such an escape or quote is inside a string, where a match only
costs a parse.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Callable, Iterable, Iterator

# Bytes that continue an identifier (a non-ASCII byte is part of a non-ASCII letter).
_IDENTIFIER_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(
    range(0x80, 0x100)
)
_QUOTES = frozenset(b"\"'`")
_DOT = ord(".")
_BACKSLASH = ord("\\")
_ESCAPED = frozenset(b"nrt")  # the JSON escapes of a line break or a tab

_KEYWORD_VALUE = re.compile(rb"\s*=(?!=)")
_CALLED = re.compile(rb"\s*\(")
_IMPORTED_AS = re.compile(rb"\s+as\b")
_LINE_END = re.compile(rb"[ \t]*(?:#[^\r\n]*)?(?:[\r\n]|\\[nr]|\"|\Z)")  # `"`: a cell's last line, in JSON
_ASSIGNED_FROM = re.compile(rb"=[ \t]*(?:[\w.]+\.)?\Z")  # the line before `name`: `x = jax.`
_PASSED_ON = re.compile(rb"\s*[,)]")
_PARTIAL_OF = re.compile(rb"partial\(\s*(?:[\w.]+\.)?\Z")  # before `name`: `functools.partial(jax.`

# A word (not a backslash's escape letter) and blanks, ending where a trigger starts.
_WORD_BEFORE = re.compile(rb"(?<![\w\x80-\xff\\])([A-Za-z_]\w*)[ \t]+\Z")

_OFFLOADING = {b"Offloadable", b"offload_dot_with_no_batch_dims", b"save_and_offload_only_these_names"}
_CHECKPOINT_FUNCTIONS = {b"checkpoint", b"filter_checkpoint"}


def _identifiers_holding(data: bytes, word: bytes) -> Iterator[tuple[bytes, int, int]]:
    """Each identifier of `data` that contains `word`, with its start and end."""
    at = data.find(word)
    while at >= 0:
        start, end = at, at + len(word)
        while start and data[start - 1] in _IDENTIFIER_BYTES:
            start -= 1
        if start and data[start - 1] == _BACKSLASH and data[start] in _ESCAPED and start < at:
            start += 1
        while end < len(data) and data[end] in _IDENTIFIER_BYTES:
            end += 1
        yield data[start:end], start, end
        at = data.find(word, end)


def _after_quote(data: bytes, start: int) -> bool:
    return start > 0 and data[start - 1] in _QUOTES


def _function_or_alias(names: set[bytes]) -> Callable[[bytes, bytes, int, int], bool]:
    """A call of one of `names`, a `functools.partial` of it (which JAX117 checks without a
    `policy=`), an import of it under another name, or an assignment of it."""

    def found(data: bytes, identifier: bytes, start: int, end: int) -> bool:
        if identifier not in names:
            return False
        if _CALLED.match(data, end):
            return True
        if _PASSED_ON.match(data, end) and _PARTIAL_OF.search(data, max(0, start - 200), start):
            return True
        if _IMPORTED_AS.match(data, end):
            return not (start and data[start - 1] == _DOT)  # `import orbax.checkpoint as ocp`
        if _LINE_END.match(data, end):
            line_start = data.rfind(b"\n", 0, start) + 1
            return _ASSIGNED_FROM.search(data, line_start, start) is not None
        return False

    return found


def _any_of(*tests: Callable[[bytes, bytes, int, int], bool]) -> Callable[[bytes, bytes, int, int], bool]:
    return lambda data, name, start, end: any(test(data, name, start, end) for test in tests)


def _dots_policy(data: bytes, name: bytes, start: int, end: int) -> bool:
    return b"checkpoint_dots" in name and not _after_quote(data, start)


def _names_factory(data: bytes, name: bytes, start: int, end: int) -> bool:
    return b"these_names" in name or b"names_but_these" in name


# Each trigger: the word to search for, and whether an identifier holding it is one. Each word
# costs a search of the whole file, so words are shared: `checkpoint` finds `checkpoint_dots`,
# and `_these` the factories of names (`save_only_these_names`, `save_any_names_but_these`).
_Triggers = tuple[tuple[bytes, Callable[[bytes, bytes, int, int], bool]], ...]
_TRIGGERS: _Triggers = (
    (b"policy", lambda data, name, start, end: name == b"policy" and bool(_KEYWORD_VALUE.match(data, end))),
    (b"saveable", lambda data, name, start, end: not _after_quote(data, start)),
    (b"ffload", lambda data, name, start, end: name in _OFFLOADING and not _after_quote(data, start)),
    (b"checkpoint", _any_of(_function_or_alias(_CHECKPOINT_FUNCTIONS), _dots_policy)),
    (b"remat", _function_or_alias({b"remat"})),
    (b"_these", _names_factory),
)
# Policy sites alone, not the other calls the rules check: a `policy=` keyword, or a call or
# alias of a checkpoint function (which may take its policy positionally).
_SITE_TRIGGERS: _Triggers = (
    _TRIGGERS[0],
    (b"checkpoint", _function_or_alias(_CHECKPOINT_FUNCTIONS)),
    (b"remat", _function_or_alias({b"remat"})),
)


def _triggers(data: bytes, triggers: _Triggers = _TRIGGERS) -> Iterator[int]:
    """The offset of each trigger in `data`, trigger by trigger."""
    return (start for _, start in _words_triggering(data, triggers))


def _words_triggering(data: bytes, triggers: _Triggers = _TRIGGERS) -> Iterator[tuple[bytes, int]]:
    """Each trigger in `data`, trigger by trigger: its word, and the offset of the identifier."""
    for word, found in triggers:
        if word in data:
            for identifier, start, end in _identifiers_holding(data, word):
                if found(data, identifier, start, end) and not _after_a_word(data, start):
                    yield word, start


def _after_a_word(data: bytes, start: int) -> bool:
    """Whether the identifier at `start` follows another word, not a keyword, and blanks on its
    line: no code (the module's docstring says why). A word just after a backslash is taken for
    a notebook's escape (`\\n`): code may follow it."""
    before = _WORD_BEFORE.search(data, max(0, start - 40), start)
    if before is None:
        return False
    word = before.group(1).decode()
    return not (keyword.iskeyword(word) or keyword.issoftkeyword(word))


def policy_keywords_alone(data: bytes) -> list[int] | None:
    """The offsets of the `policy=` keywords in `data` when they are all it holds of the words
    `could_hold_site` looks for; None when it holds another (or none at all)."""
    found = []
    for word, start in _words_triggering(data):
        if word != _TRIGGERS[0][0]:
            return None
        found.append(start)
    return found or None


def could_hold_site(data: bytes, policy_sites_only: bool = False) -> bool:
    """Whether a file's bytes could hold a policy site or a call the rules check (only a policy
    site, if `policy_sites_only`)."""
    return next(_triggers(data, _SITE_TRIGGERS if policy_sites_only else _TRIGGERS), None) is not None


_TAG = b"checkpoint_name"


# Each asked of a file parsed for its sites: to choose the definitions to parse, then by the
# scope builder. A text's hash is kept by the string, and equal texts are the same object.
@functools.lru_cache(maxsize=4)
def site_lines(text: str) -> tuple[int, ...]:
    """The 1-based lines of `text` that hold a trigger, in order: a site or a checked call
    spans at least one of them. A partial parse keeps the definitions that hold one."""
    data = text.encode("utf-8", "surrogatepass")
    return tuple(sorted({line for _, line in _with_lines(data, _triggers(data))}))


@functools.lru_cache(maxsize=4)
def trigger_lines(text: str) -> tuple[int, ...]:
    """`site_lines` and the lines that tag a value with a name (`checkpoint_name`), in order: the
    lines the scope builder walks for calls, the tags' for the names index (JAX112). A file of
    tags alone holds nothing to report (the index reads it on its own), and a partial parse
    leaves out a definition that holds tags only (the index parses it when it reads the tags)."""
    data = text.encode("utf-8", "surrogatepass")
    tags = (start for name, start, _ in _identifiers_holding(data, _TAG) if name == _TAG)
    return tuple(sorted({*site_lines(text), *(line for _, line in _with_lines(data, tags))}))


def _with_lines(data: bytes, offsets: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Each of `offsets` in `data`, in order, with its 1-based line (counted as they go)."""
    newlines_before, counted_to = 0, 0
    for offset in sorted(offsets):
        newlines_before += data.count(b"\n", counted_to, offset)
        counted_to = offset
        yield offset, newlines_before + 1


# Compiled at their first use (re keeps them): most files give no name to a checkpoint function.
_ALIAS_IMPORTED = rb"\s+as\s+([^\W\d]\w*)"
_ALIAS_ASSIGNED = rb"[ \t]*([^\W\d]\w*)[ \t]*="


def site_trigger_lines(data: bytes) -> tuple[list[int], set[bytes]]:
    """The sorted 1-based lines of `data` that hold a policy-site trigger, and the names a
    checkpoint function is given (`ckpt = jax.checkpoint`, `import ... checkpoint as ckpt`,
    `ckpt = partial(jax.checkpoint, ...)`): their calls hold no trigger of their own."""
    lines: set[int] = set()
    aliases: set[bytes] = set()
    for offset, line in _with_lines(data, _triggers(data, _SITE_TRIGGERS)):
        lines.add(line)
        if data.startswith(b"policy", offset):
            continue
        end = offset
        while end < len(data) and data[end] in _IDENTIFIER_BYTES:
            end += 1
        if _CALLED.match(data, end):
            continue
        imported = re.compile(_ALIAS_IMPORTED).match(data, end)
        assigned = re.compile(_ALIAS_ASSIGNED).match(data, data.rfind(b"\n", 0, offset) + 1)
        if imported or assigned:
            aliases.add((imported or assigned).group(1))  # type: ignore[union-attr]
    return sorted(lines), aliases
