"""The packages of jax_lsp import one way: core <- rules <- engine <- (trace, server, cli).

Checked on the source, every import statement included (those inside functions too)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jax_lsp"

# What each layer may import of jax_lsp, beside itself.
ALLOWED = {
    "core": set(),
    "rules": {"core"},
    "engine": {"core", "rules"},
    "trace": {"core", "engine"},
    "server": {"core", "rules", "engine", "trace"},
    "cli": {"core", "rules", "engine", "trace", "server"},
}
# The trace agent runs in the user's interpreter, where jax-lsp may not be installed.
AGENT_MAY_IMPORT = {"jax", "numpy"}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "jax_lsp":
            found += [(node.lineno, f"jax_lsp.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "jax_lsp" or len(parts) == 1 or parts[1] == "__version__":
        return None
    return parts[1]


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer):
    wrong = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, module in _imports(path):
            assert not module.startswith("."), f"{path}:{line}: relative import {module}"
            used = _layer_of(module)
            if used is not None and used != layer and used not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_trace_agent_imports_only_the_standard_library_and_jax():
    wrong = []
    for path in sorted((PACKAGE / "trace_agent").glob("*.py")):
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in AGENT_MAY_IMPORT:
                wrong.append(f"{path.name}:{line}: imports {module}")
    assert not wrong, "\n".join(wrong)


def test_every_module_sits_in_a_layer():
    loose = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py", "jupyter.py"}
    assert not loose, f"modules outside the layers: {sorted(loose)}"


def test_the_layer_test_sees_a_wrong_import(tmp_path):
    wrong = tmp_path / "m.py"
    wrong.write_text("from jax_lsp import files\ndef f():\n    from jax_lsp.server import x\n")
    assert _imports(wrong) == [(1, "jax_lsp.files"), (3, "jax_lsp.server")]
    assert _layer_of("jax_lsp.server.x") == "server"
