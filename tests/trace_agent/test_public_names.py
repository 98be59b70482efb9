"""The trace agent's modules use only each other's public names: no `load._read` from the advisor.

Checked on the source, as tests/test_layers.py checks the imports."""

from __future__ import annotations

import ast
from pathlib import Path

AGENT = Path(__file__).resolve().parent.parent.parent / "jax_lsp" / "trace_agent"


def _module_names() -> set[str]:
    """The last part of every module name of the agent (``load``, ``driver``, ``advisor``)."""
    return {p.parent.name if p.name == "__init__.py" else p.stem for p in AGENT.rglob("*.py")}


def _private_uses(source: str, modules: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each private name of an agent module used here: ``from .load import _read``,
    ``load._read``. A module is known by its name, as the agent's modules import one another."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            found += [(node.lineno, f"imports {a.name}") for a in node.names if _private(a.name)]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
        ):
            found.append((node.lineno, f"uses {node.value.id}.{node.attr}"))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_agent_module_uses_a_private_name_of_another():
    modules = _module_names()
    wrong = [
        f"{path.relative_to(AGENT)}:{line}: {text}"
        for path in sorted(AGENT.rglob("*.py"))
        for line, text in _private_uses(path.read_text(encoding="utf-8"), modules)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_a_private_import_and_a_private_attribute():
    source = "from . import load\nfrom .load import _read, source_lines\nload._execute()\nload.__name__\n"
    assert _private_uses(source, {"load"}) == [(2, "imports _read"), (3, "uses load._execute")]
    assert {"load", "driver", "advisor", "agent"} <= _module_names()
