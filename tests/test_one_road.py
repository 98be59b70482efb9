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
        "server/features/advisor/feature.py",
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


ADVICE = "trace/advisor/contract.py"  # the advice's one wire format (write_advice, advice_fields)
# Keys of the advice's JSON (docs/advise.md) that only the type reads or writes, in the layers the
# advice travels through (the host, the editor's server, the CLI); the agent writes its answer
# in them (trace_agent/, where jax-lsp is not importable).
ADVICE_KEYS = {
    "policies",
    "same_as",
    "no_effect",
    "fit_check",
    "compiled",
    "compile_s",
    "compile_error",
    "compile_stopped",
    "exhausted",
    "recompute_flops",
}
TRAVELLED = ("trace/", "server/", "cli/")
# Not the advice's JSON: a request's list of candidates (a dict display of its params), and the
# agent's raw answer read for what the advice does not keep (each residual's source span, which
# the written policy's tags are placed by).
REQUEST_KEYS = {
    ("trace/advisor/request.py", "policies", "written"),
    ("trace/advisor/write/requests.py", "policies", "written"),
    ("trace/advisor/write/values.py", "policies", "read"),
}


def _advice_keys(tree: ast.Module) -> set[tuple[str, str]]:
    """The advice's keys a module names, and how: ``written`` in a dict display, ``read`` in a
    subscript or a `.get`, `.setdefault`, `.pop`."""
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys, how = [k for k in node.keys if k is not None], "written"
        elif isinstance(node, ast.Subscript):
            keys, how = [node.slice], "read"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"get", "setdefault", "pop"}
        ):
            keys, how = node.args[:1], "read"
        else:
            continue
        named |= {(k.value, how) for k in keys if isinstance(k, ast.Constant) and k.value in ADVICE_KEYS}
    return named


def test_only_the_advices_type_builds_or_reads_its_json():
    named = {
        (path, key, how)
        for path, tree in _sources().items()
        if path != ADVICE and path.startswith(TRAVELLED)
        for key, how in _advice_keys(tree)
    }
    assert named <= REQUEST_KEYS, sorted(named)


def test_the_advice_check_sees_a_dict_built_or_read_elsewhere():
    tree = ast.parse(
        "a = {'same_as': []}\nb = answer['policies']\nc = entry.get('compiled')\nd = x['other']\n"
    )
    assert _advice_keys(tree) == {("same_as", "written"), ("policies", "read"), ("compiled", "read")}


ERRORS = "cli/errors.py"  # the command line's error line, and how a command that cannot go on ends


def _writes_error_line(tree: ast.Module) -> bool:
    """Whether the module writes the error line's prefix (`jax-lsp: error:`) in a string."""
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and "jax-lsp: error:" in node.value
        for node in ast.walk(tree)
    )


def test_one_module_writes_the_command_lines_error():
    """`check`, `trace`, `advise` and `rule` say an error, and end on one, through cli/errors.py:
    each wrote its own `_fail` (issue 48)."""
    sources = _sources()
    assert {path for path, tree in sources.items() if _writes_error_line(tree)} == {ERRORS}
    failing = {
        path
        for path, tree in sources.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name in {"_fail", "fail"}
    }
    assert failing == {ERRORS}


def test_the_error_line_check_sees_an_f_string():
    assert _writes_error_line(ast.parse('print(f"jax-lsp: error: {message}", file=sys.stderr)\n'))
