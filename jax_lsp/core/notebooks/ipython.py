"""IPython syntax in notebook cells, made opaque: the lines that only IPython understands are
replaced so the cell parses as Python, with every other line (and so every position) unchanged.

What is opaque, as IPython reads it (and as ruff treats it): line magics and shell escapes at the
start of a statement (``%timeit f(x)``, ``!pip install jax``, ``!!ls``, ``files = !ls``,
``t = %time f()``), help (``x?``, ``??x``), autocall escapes (``/f x``, ``,f a b``, ``;f a``),
automagics (``pip install jax``, ``time f(x)``: a magic's name followed by a word), and cell
magics: ``%%time``, ``%%capture`` and the others whose body is Python keep their body;
``%%bash``, ``%%writefile`` and any other cell magic hide the whole cell.
"""

from __future__ import annotations

import keyword
import re

from jax_lsp.core.text.decoding import split_lines

# Cell magics whose body is Python code (the rest of the cell is checked).
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})

# Magics IPython runs without their `%` when automagic is on (ruff's list, give or take).
AUTOMAGICS = frozenset(
    """
    alias alias_magic autoawait autocall automagic bookmark cd code_wrap colors conda config debug
    dhist dirs doctest_mode edit env gui history killbgscripts load load_ext loadpy logoff logon
    logstart logstate logstop lsmagic macro magic mamba matplotlib micromamba notebook page pastebin
    pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat
    pylab quickref recall rehashx reload_ext rerun reset reset_selective run save sc set_env sx
    system tb time timeit unalias unload_ext who who_ls whos xdel xmode
    """.split()
)

# A statement that starts with an escape: magic, shell, help, autocall.
_ESCAPE = re.compile(r"[ \t]*[%!?/,;]")
# `files = !ls`, `a, b = %time f()`: an assignment from a shell command or a magic.
_ASSIGN_ESCAPE = re.compile(r"[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[%!]")
# `pip install jax`: a magic's name and then a word, a flag or a path (not an operator).
_AUTOMAGIC = re.compile(r"[ \t]*(?P<name>[A-Za-z_]\w*)[ \t]+(?P<next>--?\w[\w-]*|[\w'\"~.][\w.]*)?")
_CELL_MAGIC = re.compile(r"%%(?P<name>\w+)")
# A cell none of whose lines could start IPython syntax, and with no `?`, is Python as it is
# (most cells): no need to follow its brackets and strings.
_MAYBE_IPYTHON = re.compile(
    r"\?|^[ \t]*(?:[%!/,;]|[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[%!]|(?:"
    + "|".join(sorted(AUTOMAGICS, key=len, reverse=True))
    + r")[ \t]+\S)",
    re.M,
)
_STRING_START = re.compile(r"(?i)(?:[rbuf]|rb|br|fr|rf)?('''|\"\"\"|'|\")")
_OPENING, _CLOSING = "([{", ")]}"


def opaque(text: str) -> str:
    """``text`` with the IPython-only lines blanked or replaced by ``pass``; same lines, same endings."""
    if not _MAYBE_IPYTHON.search(text):
        return text
    lines = split_lines(text)
    first = lines[0].rstrip("\r\n")
    magic = _CELL_MAGIC.match(first)
    if magic:
        if magic["name"] not in PYTHON_CELL_MAGICS:
            return "".join(_blank(line) for line in lines)
        lines[0] = _blank(lines[0])
    return "".join(_mask_statements(lines))


def _blank(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _replace(line: str) -> str:
    """The statement in ``line`` as ``pass`` at its indentation (keeps an indented block valid)."""
    content = line.rstrip("\r\n")
    indent = content[: len(content) - len(content.lstrip(" \t"))]
    return f"{indent}pass{line[len(content) :]}"


def _is_escape(line: str) -> bool:
    if _ESCAPE.match(line) or _ASSIGN_ESCAPE.match(line):
        return True
    automagic = _AUTOMAGIC.match(line)
    return bool(
        automagic
        and automagic["name"] in AUTOMAGICS
        and automagic["next"] is not None
        and not keyword.iskeyword(automagic["next"])
    )


def _mask_statements(lines: list[str]) -> list[str]:
    out = list(lines)
    scanner = _Scanner()
    number = 0
    statement_start = 0
    while number < len(lines):
        line = lines[number]
        if scanner.at_statement_start:
            statement_start = number
            if _is_escape(line.rstrip("\r\n")):
                # The escape runs to the end of the line, and on while lines end with a backslash.
                out[number] = _replace(line)
                while line.rstrip("\r\n").endswith("\\") and number + 1 < len(lines):
                    number += 1
                    line = lines[number]
                    out[number] = _blank(line)
                number += 1
                continue
        scanner.feed(line.rstrip("\r\n"))
        if scanner.at_statement_start and scanner.last_code == "?":  # help: `x?`, `obj.method??`
            out[statement_start] = _replace(lines[statement_start])
            for n in range(statement_start + 1, number + 1):
                out[n] = _blank(lines[n])
        number += 1
    return out


class _Scanner:
    """Brackets, strings and continuations across lines: where a new statement can start.

    Approximate on purpose (Python 3.12 f-strings nesting the same quotes are read as two
    strings), which only ever costs a syntax error on a line that IPython would have run."""

    def __init__(self) -> None:
        self.depth = 0
        self.string: str | None = None  # the open string's quote ("'", '"""', ...)
        self.continued = False
        self.last_code = ""  # the last character of code on the latest line (not a comment)

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.string is None and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        self.last_code = ""
        i = 0
        while i < len(line):
            if self.string is not None:
                i = self._in_string(line, i)
                continue
            char = line[i]
            if char == "#":
                break
            match = _STRING_START.match(line, i)
            if match and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
                self.string = match.group(1)
                self.last_code = self.string[0]
                i = match.end()
                continue
            if char in _OPENING:
                self.depth += 1
            elif char in _CLOSING:
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and i == len(line) - 1:
                self.continued = True
            if not char.isspace():
                self.last_code = char
            i += 1
        if self.string is not None and len(self.string) == 1 and not self.continued:
            if not line.endswith("\\"):
                self.string = None  # an unclosed one-line string: a syntax error, not our business
            else:
                self.continued = False

    def _in_string(self, line: str, i: int) -> int:
        quote = self.string
        assert quote is not None
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                self.string = None
                self.last_code = quote[0]
                return i + len(quote)
            i += 1
        return i
