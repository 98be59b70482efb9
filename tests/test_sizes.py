"""No module over 600 lines and no function over 80 lines in the advisor's folders, the LSP
features and the engine (issue 49): a reader takes in one module, one function at a time.

Checked on the source, as tests/test_layers.py checks the imports: a function's lines run from
its `def` (or first decorator) to its last line, nested functions included."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jax_lsp"
FOLDERS = ("trace/advisor", "trace_agent/advisor", "server/features", "engine")
MODULE_LINES = 600
FUNCTION_LINES = 80

# Over the limits today, each split by the helper who owns the module (issue 49); an entry
# leaves this list with its split. An entry that is no longer over fails the test below, so
# the list never holds more than it must.
BEING_SPLIT: dict[str, str] = {}


def _oversized(path: Path) -> list[tuple[str, int]]:
    """``(name, lines)`` of the module (``""``) and of each function of ``path`` over its limit."""
    text = path.read_text(encoding="utf-8")
    found = []
    lines = len(text.splitlines())
    if lines > MODULE_LINES:
        found.append(("", lines))
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - first + 1
            if length > FUNCTION_LINES:
                found.append((node.name, length))
    return found


def _over_limits() -> dict[str, int]:
    """``{"folder/module.py": lines, "folder/module.py::function": lines}`` over the limits."""
    over = {}
    for folder in FOLDERS:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            module = path.relative_to(PACKAGE).as_posix()
            for name, lines in _oversized(path):
                over[f"{module}::{name}" if name else module] = lines
    return over


def test_no_module_or_function_is_over_its_limit():
    over = {name: lines for name, lines in _over_limits().items() if name not in BEING_SPLIT}
    assert not over, f"over {MODULE_LINES} lines a module or {FUNCTION_LINES} a function (split them): {over}"


def test_what_is_being_split_is_still_over():
    """An entry of `BEING_SPLIT` that was split leaves the list."""
    over = _over_limits()
    assert [name for name in BEING_SPLIT if name not in over] == []


def test_the_check_sees_a_long_function_and_a_long_module(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LINES))
    short = "def short():\n    return 1\n"
    source = tmp_path / "m.py"
    source.write_text("@decorated\ndef long():\n" + body + short + "#\n" * MODULE_LINES)
    assert _oversized(source) == [("", MODULE_LINES + FUNCTION_LINES + 4), ("long", FUNCTION_LINES + 2)]
