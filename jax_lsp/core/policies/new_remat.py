"""Where a project turns on JAX's new remat (`jax_remat3`), under which JAX ignores every callable
policy and `save_from_both_policies`: only data policies (`dots_saveable`, the names policies)
still choose what is saved.

JAX reads the flag as every boolean option: `jax.config.update("jax_remat3", True)`, the
environment variable `JAX_REMAT3` (set in code: `os.environ["JAX_REMAT3"] = "1"`), the
`--jax_remat3` command-line flag. Those turn it on for the process: they are the project's
switch. The string names nothing else, so a call or assignment that writes it is taken as the
switch, whatever the receiver is called. The scoped forms, the state's context manager
(`with config.remat3(True):`) and test decorators (`@jtu.with_config(jax_remat3=True)`), turn it
on for their block alone, as JAX's own tests do: they are no project's switch.
"""

from __future__ import annotations

import ast
import re

from jax_lsp.core.binding.scopes import string_constant, walk_spanning
from jax_lsp.core.findings import Span
from jax_lsp.core.record import Record
from jax_lsp.core.text.chunks import at_line, closes_within, holds_line, statement_chunks
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.core.text.source import parse_text

FLAG = "jax_remat3"
ENVIRONMENT_VARIABLE = "JAX_REMAT3"
# How JAX reads a boolean option from the environment (its strtobool).
_TRUE_STRINGS = frozenset({"y", "yes", "t", "true", "on", "1"})


class NewRematSwitch(Record):
    """Where the new remat is turned on: a place in the project, or the `new-remat` setting."""

    __slots__ = ("path", "span")
    path: str | None  # None: the setting `new-remat = "always"`
    span: Span | None

    def __init__(self, path: str | None, span: Span | None) -> None:
        self._assign(path, span)

    def where(self) -> str:
        if self.path is None or self.span is None:
            return 'the setting `new-remat = "always"`'
        return f"{self.path}:{self.span.start.line + 1}"


# What no switch can be written without: the flag's name in quotes (`"jax_remat3"`,
# `"JAX_REMAT3"`, `"--jax_remat3"`), or the variable as a keyword (`os.environ.update(JAX_REMAT3="1")`).
# `jtu.with_config(jax_remat3=True)` and `config.remat3(True)` are scoped: no switch.
_SWITCH_TEXT = r"""["'](?:--)?(?:jax_remat3|JAX_REMAT3)["']|\bJAX_REMAT3\s*=(?!=)"""
_SWITCH_BYTES = re.compile(_SWITCH_TEXT.encode())
_SWITCH = re.compile(_SWITCH_TEXT)
# How far before the flag's name (`jax_remat3` or `JAX_REMAT3`) a match of _SWITCH_BYTES holding
# it starts: at the quote of `"--jax_remat3"`, at that of `"jax_remat3"`, at `JAX_REMAT3 =`.
_SWITCH_STARTS_BEFORE = (3, 1, 0)


def could_turn_on(data: bytes) -> bool:
    """A byte search: whether a file may hold a switch (only those are parsed). The expression
    is tried only where the flag's name is: searched for, it tries every byte of the file (tens
    of milliseconds on the three files of JAX's tree that name the flag). The whole name is
    searched for, not `remat3`: a longer word is found in fewer steps (about half)."""
    for word in (b"jax_remat3", b"JAX_REMAT3"):
        at = data.find(word)
        while at >= 0:
            if any(at >= back and _SWITCH_BYTES.match(data, at - back) for back in _SWITCH_STARTS_BEFORE):
                return True
            at = data.find(word, at + 1)
    return False


def switch_lines(text: str) -> list[int]:
    """The 1-based lines of `text` that may hold part of a switch: a switch spans one of them."""
    return [text.count("\n", 0, match.start()) + 1 for match in _SWITCH.finditer(text)]


def _true(expr: ast.expr | None) -> bool:
    if (
        isinstance(expr, ast.Constant)
        and isinstance(expr.value, (bool, int))
        and not isinstance(expr.value, str)
    ):
        return bool(expr.value)
    text = string_constant(expr)
    return text is not None and text.strip().lower() in _TRUE_STRINGS


def _names_flag(expr: ast.expr | None) -> bool:
    return string_constant(expr) in (FLAG, ENVIRONMENT_VARIABLE, "--" + FLAG)


def _switches_on(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        args = node.args
        if name in ("update", "setdefault", "putenv") and len(args) >= 2:
            return _names_flag(args[0]) and _true(args[1])  # config.update(...), os.environ.setdefault(...)
        if name == "update" and len(args) == 1 and isinstance(args[0], ast.Dict):
            return any(_names_flag(k) and _true(v) for k, v in zip(args[0].keys, args[0].values))
        if name == "update" and not args:
            return any(k.arg == ENVIRONMENT_VARIABLE and _true(k.value) for k in node.keywords)
        return False
    if isinstance(node, ast.Assign):
        return _true(node.value) and any(
            isinstance(t, ast.Subscript) and _names_flag(t.slice) for t in node.targets
        )
    return False


def switches_in(tree: ast.AST, text: str) -> list[ast.Call | ast.Assign]:
    """The calls and assignments in `tree` (parsed from `text`) that turn the new remat on, in
    source order."""
    found = [
        node
        for node in walk_spanning(tree, switch_lines(text))
        if isinstance(node, (ast.Call, ast.Assign)) and _switches_on(node)
    ]
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def first_switch(text: str, path: str) -> Span | None:
    """Where the first switch of a Python file's `text` is, if any: only the statements holding
    a line that may be part of one are parsed (the whole file, if such a statement does not
    close what it opens: a line in a string may look like a statement's first)."""
    wanted = switch_lines(text)
    lines = split_lines(text) if wanted else []
    for start, end in statement_chunks(lines):
        if not holds_line(wanted, start + 1, end):
            continue
        chunk = "".join(lines[start:end])
        whole = not closes_within(chunk)
        source = parse_text(text if whole else at_line(chunk, start), path)
        found = switches_in(source.tree, source.text)
        if found or whole:
            return source.span(found[0]) if found else None
    return None
