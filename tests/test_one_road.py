"""One road from a finding to the user, checked on the source as tests/test_layers.py checks the
imports: LSP diagnostics are built in one module, workspace edits in one, the client's
capabilities are read by dotted name only in the record built at initialize, and every
producer of findings passes the engine's one selection step."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jax_lsp"

# What only one module may build, or read, and that module.
ONE_HOME = {
    "Diagnostic": "server/diagnostics.py",  # types.Diagnostic(...)
    "WorkspaceEdit": "server/edits.py",  # types.WorkspaceEdit(...)
    "TextDocumentEdit": "server/edits.py",
}
CAPABILITIES = "server/client_support.py"
SELECTION = "engine/selection.py"


@functools.cache
def _sources() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(PACKAGE)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _called_names(tree: ast.Module) -> set[str]:
    """The names of what the module calls: `f(...)`, `types.f(...)`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def _builders(name: str, sources: dict[str, ast.Module]) -> set[str]:
    return {path for path, tree in sources.items() if name in _called_names(tree)}


@pytest.mark.parametrize("name", sorted(ONE_HOME))
def test_one_module_builds_each_lsp_value(name):
    assert _builders(name, _sources()) == {ONE_HOME[name]}


def _dotted_capability_reads(tree: ast.Module) -> list[str]:
    """`client_capabilities` read anywhere, and dotted capability strings ("workspace.x.y")."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "client_capabilities":
            found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.split(".", 1)[0] in {"workspace", "window", "text_document", "general"}
            and "." in node.value
            and " " not in node.value
        ):
            found.append(node.value)
    return found


def test_capabilities_are_read_by_name_only_in_the_record():
    reads = {path: found for path, tree in _sources().items() if (found := _dotted_capability_reads(tree))}
    assert set(reads) <= {CAPABILITIES}, reads


def test_the_noqa_comment_and_the_severity_overrides_are_read_in_the_selection_step_only():
    """`severity_of` (the overrides) and `noqa_codes` are called in one module; the features,
    the CLI's trace and the rules' pass call `admitted` instead."""
    sources = _sources()
    assert _builders("severity_of", sources) == {SELECTION}
    assert _builders("noqa_codes", sources) <= {SELECTION}
    producers = {
        "engine/analysis.py",
        "cli/tracing.py",
        "server/features/trace.py",
        "server/features/advisor.py",
    }
    assert producers <= _builders("admitted", sources)


def test_the_checks_see_a_second_home():
    tree = ast.parse("from lsprotocol import types\nd = types.Diagnostic(range=None, message='')\n")
    assert "Diagnostic" in _called_names(tree)
    tree = ast.parse(
        "x = supports(caps, 'workspace.workspace_edit.document_changes')\ny = ls.client_capabilities\n"
    )
    assert sorted(_dotted_capability_reads(tree)) == [
        "ls.client_capabilities",
        "workspace.workspace_edit.document_changes",
    ]
