"""Which example a site is advised with, when the user gave none on the command line.

First match wins: a ``# jax-lsp: example=SPEC`` comment on the site's line; then
``[tool.jax-lsp.examples]`` of pyproject.toml, whose keys name the site's file relative to that
file's folder and, after a colon, what in it: the site's line (``"model.py:42"``), the function
or class that holds the site, innermost first (``"model.py:Block.__call__"``,
``"model.py:Block"``: a key that follows the site across edits above it), or nothing
(``"model.py"``, every site of the file).

In the editor a line key follows the lines of the buffer it was written for: `KeyLines` moves
each key's line with the buffer's edits, so that a site that moved is still found by its key.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from jax_lsp.core.text.decoding import split_lines
from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.mapping import LineEdit

EXAMPLE_COMMENT = re.compile(r"#\s*jax-lsp:\s*example\s*=\s*(?P<spec>[^\s#]+)")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def example_for(
    workspace: Workspace,
    path: Path,
    line: int,
    examples: Mapping[str, str],
    root: Path | None,
    key_line: int | None,
) -> str | None:
    """The example of the site on 1-based ``line`` of ``path`` as ``workspace`` holds it (an open
    buffer, else the file): its comment, else the first key of ``examples`` (relative to
    ``root``) that names it. ``key_line``: the line a ``"file.py:LINE"`` key of it would name
    (the CLI's: ``line``; the editor's: `KeyLines.key_at`), None where none can."""
    module = workspace.load(path)
    lines = module.source.lines if module is not None else _disk_lines(path)
    if 1 <= line <= len(lines):
        match = EXAMPLE_COMMENT.search(lines[line - 1])
        if match:
            return match["spec"]
    rel = relative(str(path), root) or str(path)
    if not any(key == rel or key.startswith(f"{rel}:") for key in examples):
        return None
    keys = [f"{rel}:{key_line}"] if key_line is not None else []
    if module is not None:
        keys += [f"{rel}:{name}" for name in enclosing_names(module.source.tree, line)]
    return next((examples[key] for key in [*keys, rel] if key in examples), None)


def enclosing_names(tree: ast.AST, line: int) -> list[str]:
    """The qualified names of the functions and classes that hold 1-based ``line`` (their
    decorators included), innermost first: ``["Block.__call__", "Block"]``."""
    return list(_holding(tree, line, ""))


def _holding(node: ast.AST, line: int, outer: str) -> Iterator[str]:
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.stmt):
            continue
        decorators = getattr(child, "decorator_list", ())
        first = min([child.lineno, *(d.lineno for d in decorators)])
        if not first <= line <= (child.end_lineno or child.lineno):
            continue
        if isinstance(child, _DEFINITIONS):
            name = f"{outer}.{child.name}" if outer else child.name
            yield from _holding(child, line, name)
            yield name
        else:  # an `if`, a `with`...: its statements are still in ``outer``
            yield from _holding(child, line, outer)
        return


def line_keys(examples: Mapping[str, str], path: Path, root: Path | None) -> list[int]:
    """The lines (1-based) that ``"file.py:LINE"`` keys of ``examples`` name in ``path``."""
    prefix = f"{relative(str(path), root) or path}:"
    return [
        int(key[len(prefix) :]) for key in examples if key.startswith(prefix) and key[len(prefix) :].isdigit()
    ]


class KeyLines:
    """Where the lines that a file's line keys name are in its buffer, after its edits: a key
    written for line 42 names the site on line 44 once two lines were added above it."""

    def __init__(self, lines: Iterable[int]) -> None:
        self._now = {line: line for line in lines}  # the key's line -> its line now (1-based)

    def follow(self, edit: LineEdit) -> None:
        """Move each line by ``edit`` (0-based lines); a line the edit rewrote stays where it
        was if the edit's text still reaches it, and is forgotten if the edit removed it."""
        followed = {}
        for key, now in self._now.items():
            shift = edit.moved(now - 1, now - 1)
            if shift is not None:
                followed[key] = now + shift
            elif now - 1 <= edit.last_touched + edit.shift:
                followed[key] = now
        self._now = followed

    def key_at(self, line: int) -> int | None:
        """The key's line that names the buffer's 1-based ``line``, if any."""
        return next((key for key, now in self._now.items() if now == line), None)


def _disk_lines(path: Path) -> list[str]:
    try:
        return split_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
