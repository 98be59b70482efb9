"""The packages of jax_lsp import one way: core <- rules <- engine <- (trace, server, cli); inside
core and inside server, their sub-packages import one way too; and no module takes part in an
import cycle.

Checked on the source, every import statement included (those inside functions too; those under
`TYPE_CHECKING` count for the layers, not for cycles)."""

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
# Inside core: what each sub-package may import of core, beside itself. "core" stands for the
# modules directly in core/ (findings, codes, config, guard, JAX's API catalogue); core's
# __init__ is its public face, which re-exports from every sub-package.
CORE_ALLOWED = {
    "core": set(),
    "text": {"core"},
    "notebooks": {"core", "text"},
    "binding": {"core", "text"},
    "policies": {"core", "text", "binding"},
    "tags": {"core", "text", "binding"},
}
# Inside server: its LSP features (`server/features/`) use the plumbing, the modules directly in
# server/ (protocol, documents, places, the checker, the diagnostics, the feature registry...),
# which never imports a feature. server's __init__ assembles both.
SERVER_ALLOWED = {
    "server": set(),
    "features": {"server"},
}
# The layers whose sub-packages import one way, and what each sub-package may import.
SUB_PACKAGES = {"core": CORE_ALLOWED, "server": SERVER_ALLOWED}
# The trace agent runs in the user's interpreter, where jax-lsp may not be installed.
AGENT_MAY_IMPORT = {"jax", "numpy"}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the import statements under `if TYPE_CHECKING:` (never run)."""
    return {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}
        for statement in block.body
        for node in ast.walk(statement)
    }


def _imports(path: Path, run_time_only: bool = False) -> list[tuple[int, str]]:
    found = []
    tree = ast.parse(path.read_bytes())
    skipped = _type_checking_only(tree) if run_time_only else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from package import module` imports that module; `from module import name` only module
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # `from . import load` (the trace agent's own modules): ".load", as above
            base = "." * node.level + (f"{node.module}." if node.module else "")
            found += [(node.lineno, base + alias.name) for alias in node.names]
    return found


def _absolute(module: str, path: Path) -> str:
    """``module`` as imported by the file at ``path``: a relative import made absolute."""
    level = len(module) - len(module.lstrip("."))
    if not level:
        return module
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    return ".".join(package[: len(package) - (level - 1)] + [module[level:]])


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "jax_lsp" or len(parts) == 1 or parts[1] == "__version__":
        return None
    return parts[1]


def _part_of(layer: str, module: str) -> str | None:
    """The sub-package of `layer` that `module` is in; `layer` for the modules directly in it."""
    parts = module.split(".")
    if parts[:2] != ["jax_lsp", layer] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in SUB_PACKAGES[layer] else layer


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of jax_lsp that `path` imports (the longest known prefix of each import)."""
    found = set()
    for _, name in _imports(path, run_time_only=True):
        parts = _absolute(name, path).split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in modules:
                found.add(candidate)
                break
    return found


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


@pytest.mark.parametrize("layer", sorted(SUB_PACKAGES))
def test_the_sub_packages_of_a_layer_import_only_those_below_them(layer):
    allowed = SUB_PACKAGES[layer]
    wrong = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        if path == PACKAGE / layer / "__init__.py":
            continue
        part = _part_of(layer, _module_name(path)) or layer
        for line, module in _imports(path):
            used = _part_of(layer, module)
            if used is not None and used != part and used not in allowed[part]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {module}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("layer", sorted(SUB_PACKAGES))
def test_every_module_of_a_layer_sits_in_a_known_sub_package(layer):
    unknown = {p.parent.name for p in (PACKAGE / layer).glob("*/*.py")} - set(SUB_PACKAGES[layer])
    assert not unknown, f"sub-packages of {layer} missing from the table: {sorted(unknown)}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_takes_part_in_an_import_cycle():
    """Function-level imports count; those under `TYPE_CHECKING` (annotations only) do not."""
    modules = _modules()
    # A package's __init__ that re-exports its modules is imported with them: not a cycle.
    graph = {
        name: {m for m in _imported_modules(path, modules) if m != name and not name.startswith(m + ".")}
        for name, path in modules.items()
    }
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_trace_agent_imports_only_the_standard_library_and_jax():
    """Beside those, only its own modules, imported relatively (it is loaded under a private name)."""
    wrong = []
    for path in sorted((PACKAGE / "trace_agent").rglob("*.py")):
        for line, module in _imports(path):
            if module.startswith("."):
                if not _absolute(module, path).startswith("jax_lsp.trace_agent."):
                    wrong.append(f"{path.name}:{line}: imports {module}, outside the agent")
                continue
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in AGENT_MAY_IMPORT:
                wrong.append(f"{path.name}:{line}: imports {module}")
    assert not wrong, "\n".join(wrong)


def test_every_module_sits_in_a_layer():
    loose = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py", "jupyter.py"}
    assert not loose, f"modules outside the layers: {sorted(loose)}"


def test_the_layer_tests_see_a_wrong_import_and_a_cycle(tmp_path):
    wrong = tmp_path / "m.py"
    wrong.write_text("from jax_lsp import files\ndef f():\n    from jax_lsp.server import x\n")
    assert _imports(wrong) == [(1, "jax_lsp.files"), (3, "jax_lsp.server.x")]
    relative = tmp_path / "r.py"
    relative.write_text("from . import load\nfrom ..errors import AgentError\n")
    assert _imports(relative) == [(1, ".load"), (2, "..errors.AgentError")]
    agent = PACKAGE / "trace_agent" / "advisor" / "driver.py"
    assert _absolute("..errors.AgentError", agent) == "jax_lsp.trace_agent.errors.AgentError"
    assert _absolute(".site", agent) == "jax_lsp.trace_agent.advisor.site"
    assert _absolute(".site", agent.parent / "__init__.py") == "jax_lsp.trace_agent.advisor.site"
    assert _layer_of("jax_lsp.server.x") == "server"
    assert _part_of("core", "jax_lsp.core.tags.index") == "tags"
    assert _part_of("core", "jax_lsp.core.findings") == "core"
    assert _part_of("server", "jax_lsp.server.features.hover") == "features"
    assert _part_of("server", "jax_lsp.server.checker") == "server"
    assert _part_of("server", "jax_lsp.core.findings") is None
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    hinted = tmp_path / "hinted.py"
    hinted.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jax_lsp.core.x\n")
    assert _imports(hinted, run_time_only=True) == [(1, "typing.TYPE_CHECKING")]
    assert (3, "jax_lsp.core.x") in _imports(hinted)
