"""Diagnostics over real stdio, in each editor profile: fields, exact positions, half-typed code."""

from __future__ import annotations

import asyncio
import sys

import pytest
from lsp_harness import position_of, start_session
from lsprotocol import types

from jax_lsp.core.codes import CODES

pytestmark = pytest.mark.asyncio(loop_scope="module")

POLICY = """import jax


def my_policy(prim, *avals, **params):
    if prim.name == "dot_general":
        return True


def f(x):
    return jax.checkpoint(lambda y: y * 2, policy=my_policy)(x)
"""


async def test_finding_becomes_a_complete_diagnostic(lsp):
    uri = lsp.open("model.py", POLICY)
    [diagnostic] = await lsp.diagnostics(uri)
    assert diagnostic.code == "JAX101"
    assert diagnostic.source == "jax-lsp"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.code_description.href.endswith("JAX101.md")
    start = position_of(POLICY, "my_policy", lsp.encoding)
    assert diagnostic.range == types.Range(
        start, types.Position(start.line, start.character + len("my_policy"))
    )
    assert diagnostic.data["fixes"][0]["safe"] is True
    assert diagnostic.data["version"] == 1


async def test_positions_are_exact_after_wide_characters(lsp):
    # é (2 UTF-8 bytes), 中文 (3 bytes each), 😀 (4 bytes, 2 UTF-16 units) before the anchor.
    prefix = 'é = "中文😀"; '
    text = POLICY.replace("def my_policy", "def my_policy").replace(
        '    if prim.name == "dot_general":\n        return True\n',
        f"    {prefix}x = 1\n    if x:\n        {prefix}return\n    return True\n",
    )
    uri = lsp.open("wide.py", text)
    [diagnostic] = await lsp.diagnostics(uri)
    start = position_of(text, "return\n", lsp.encoding)
    assert diagnostic.range.start == start
    assert diagnostic.range.end == types.Position(start.line, start.character + len("return"))


async def test_a_syntax_error_elsewhere_hides_nothing_and_is_not_shown(lsp):
    text = POLICY + "\n\ndef broken(:\n    pass\n"
    uri = lsp.open("broken.py", text)
    diagnostics = await lsp.diagnostics(uri)
    assert [d.code for d in diagnostics] == ["JAX101"]
    assert not [m for m in lsp.client.messages if m.type == types.MessageType.Error]


async def _log_lines(lsp, needle: str, timeout: float = 10) -> list[str]:
    """The log messages holding `needle`, once at least one has arrived."""

    async def arrived() -> list[str]:
        while not (found := [m.message for m in lsp.client.log_messages if needle in m.message]):
            await asyncio.sleep(0.05)
        return found

    return await asyncio.wait_for(arrived(), timeout)


async def test_newer_python_syntax_is_logged_once_and_the_rest_checked(lsp, newer_syntax):
    python, statement = newer_syntax
    text = statement + "\n" + POLICY
    path = lsp.root / "newer.py"
    lsp.write("newer.py", text)  # the index reads it from disk, the buffer follows
    uri = lsp.open("newer.py")
    assert [d.code for d in await lsp.diagnostics(uri)] == ["JAX101"]
    end = types.Position(len(text.split("\n")) - 1, 0)
    for edit in range(3):  # re-checked on every keystroke, logged once
        lsp.change(uri, end, end, f"x{edit} = 1\n")
        end = types.Position(end.line + 1, 0)
        assert [d.code for d in await lsp.diagnostics(uri)] == ["JAX101"]
    [line] = await _log_lines(lsp, "not checked")
    running = ".".join(map(str, sys.version_info[:2]))
    assert line.startswith(
        f"INFO {path}: 1 statement was not checked: it needs Python {python[0]}.{python[1]} "
        f"and jax-lsp runs on Python {running} (line 1: "
    )


async def test_diagnostics_follow_edits(lsp):
    uri = lsp.open("edit.py", POLICY)
    assert [d.code for d in await lsp.diagnostics(uri)] == ["JAX101"]
    end_of_true = position_of(POLICY, "True\n", lsp.encoding)
    end_of_true.character += len("True")
    lsp.change(uri, end_of_true, end_of_true, "\n    return False")
    assert await lsp.diagnostics(uri) == []


async def test_only_python_documents_are_checked(lsp):
    notes = lsp.open("notes.txt", POLICY, language_id="plaintext")
    model = lsp.open("model.py", POLICY)
    assert len(await lsp.diagnostics(model)) == 1
    assert await lsp.diagnostics(notes) == [] if lsp.pull else notes not in lsp.published


async def test_a_pull_with_the_last_result_id_is_answered_unchanged(tmp_path):
    async with start_session("vscode", tmp_path) as lsp:  # the profile that pulls
        await _pull_unchanged_then_full(lsp)


async def _pull_unchanged_then_full(lsp):
    uri = lsp.open("pulled.py", POLICY)
    await lsp.diagnostics(uri)

    async def pull(previous):
        return await lsp.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri), previous_result_id=previous
            )
        )

    full = await pull(None)
    assert [d.code for d in full.items] == ["JAX101"] and full.result_id
    assert (await pull(full.result_id)).kind == "unchanged"
    end_of_true = position_of(POLICY, "True\n", lsp.encoding)
    end_of_true.character += len("True")
    lsp.change(uri, end_of_true, end_of_true, "\n    return False")
    fixed = await pull(full.result_id)
    assert (fixed.kind, list(fixed.items)) == ("full", [])
    assert fixed.result_id != full.result_id


async def test_a_named_lambda_policy_gets_its_diagnostics(lsp):
    text = (
        "import jax, jax.numpy as jnp\n"
        "save_cos = lambda prim, *_, **__: str(prim) == 'cos'\n"
        "skip_sin = lambda prim, *_, **__: None if prim.name == 'sin' else True\n"
        "f = jax.remat(lambda x: jnp.sin(jnp.sin(x)), policy=save_cos)\n"
        "g = jax.remat(lambda x: jnp.sin(jnp.sin(x)), policy=skip_sin)\n"
    )
    uri = lsp.open("lambdas.py", text)
    [diagnostic] = await lsp.diagnostics(uri)
    assert diagnostic.code == "JAX101"
    assert diagnostic.range.start == position_of(text, "None if", lsp.encoding)
    assert not [m for m in lsp.client.messages if m.type == types.MessageType.Error]


async def test_every_diagnostic_links_the_page_of_its_code(lsp):
    text = POLICY + '\n\ng = jax.checkpoint(lambda y: y, policy="dots_saveable")\n'
    uri = lsp.open("links.py", text)
    diagnostics = await lsp.diagnostics(uri)
    assert sorted(d.code for d in diagnostics) == ["JAX101", "JAX111"]
    for diagnostic in diagnostics:
        assert diagnostic.code_description.href == CODES[diagnostic.code].doc_url
