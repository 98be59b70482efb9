"""How a file lays out its lines, for an edit that should look as if written there: the
project's line length (ruff's or black's `line-length`, else their default 88) and the file's
indentation step.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DEFAULT_LINE_LENGTH = 88  # ruff's and black's


def line_length(path: Path) -> int:
    """``line-length`` of ``[tool.ruff]`` (else ``[tool.black]``) in the nearest pyproject.toml
    above ``path``; the default where it sets none or cannot be read."""
    for folder in path.resolve().parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return _configured(candidate) or DEFAULT_LINE_LENGTH
    return DEFAULT_LINE_LENGTH


def _configured(pyproject: Path) -> int | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    tools = data.get("tool", {})
    for tool in ("ruff", "black"):
        value = tools.get(tool, {}).get("line-length") if isinstance(tools.get(tool), dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def indent_step(text: str) -> str:
    """The file's indentation step: the shortest indentation of its indented lines (two spaces
    in a 2-space file, a tab in a tabbed one), else four spaces."""
    indents = [line[: len(line) - len(line.lstrip())] for line in text.splitlines() if line.strip()]
    steps = [indent for indent in indents if indent]
    return min(steps, key=len) if steps else "    "


def fitted(line: str, start: int, end: int, value: str, limit: int, step: str) -> str:
    """The text to write over ``line[start:end]`` (columns in code points) so that it reads
    ``value``: as it is where the line then fits in ``limit`` columns (or is no longer than it
    was), else starting a line of its own indented one ``step`` deeper than ``line`` (for a
    value inside brackets, such as a call's argument, where Python joins the lines)."""
    rest = line[end:].rstrip("\r\n")
    if start + len(value) + len(rest) <= max(limit, start + (end - start) + len(rest)):
        return value
    indent = line[: len(line) - len(line.lstrip())]
    return "\n" + indent + step + value
