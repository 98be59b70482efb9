"""The workspace index: cross-file findings, $/progress, watched files, hover."""

from __future__ import annotations

import asyncio

import pytest
from lsp_harness import position_of, start_session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

POLICIES = """def offload_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
"""

MODEL = """import jax

from policies import offload_dots


def f(x):
    return jax.checkpoint(lambda y: y * 2, policy=offload_dots)(x)
"""


async def test_opening_only_the_definition_shows_findings_from_a_site_elsewhere(server, tmp_path):
    (tmp_path / "policies.py").write_text(POLICIES)
    (tmp_path / "model.py").write_text(MODEL)
    async with server.in_folder(tmp_path) as lsp:
        uri = lsp.open("policies.py")
        [diagnostic] = await lsp.eventually(uri, lambda d: len(d) == 1)
        assert diagnostic.code == "JAX101"
        related = diagnostic.related_information or []
        assert [r.location.uri for r in related] == [(tmp_path / "model.py").as_uri()]
        if lsp.client.capabilities.window.work_done_progress:
            [reports] = [r for token, r in lsp.client.progress_reports.items() if "index" in str(token)]
            assert [r.kind for r in (reports[0], reports[-1])] == ["begin", "end"]
            assert any(r.kind == "report" for r in reports)


async def test_editing_the_site_republishes_the_definition(server, tmp_path):
    (tmp_path / "policies.py").write_text(POLICIES)
    (tmp_path / "model.py").write_text(MODEL)
    async with server.in_folder(tmp_path) as lsp:
        policies = lsp.open("policies.py")
        await lsp.eventually(policies, lambda d: len(d) == 1)
        model = lsp.open("model.py")
        start = position_of(MODEL, "offload_dots)", lsp.encoding)
        end = types.Position(start.line, start.character + len("offload_dots"))
        lsp.change(model, start, end, "None")
        await lsp.eventually(policies, lambda d: d == [])
        if not lsp.pull:  # and then quiet: the two files do not keep re-checking each other
            await asyncio.sleep(0.3)
            published = len(lsp.history)
            await asyncio.sleep(0.5)
            assert len(lsp.history) == published
        # Closing the buffer goes back to the file on disk, which still uses the policy.
        lsp.close(model)
        await lsp.eventually(policies, lambda d: len(d) == 1)


async def test_a_file_changed_on_disk_updates_the_index(server, tmp_path):
    (tmp_path / "policies.py").write_text(POLICIES)
    async with server.in_folder(tmp_path) as lsp:
        policies = lsp.open("policies.py")
        assert await lsp.diagnostics(policies) == []
        registered = [r.method for r in getattr(lsp.client, "registrations", [])]
        dynamic = lsp.client.capabilities.workspace.did_change_watched_files.dynamic_registration
        assert (types.WORKSPACE_DID_CHANGE_WATCHED_FILES in registered) == bool(dynamic)
        (tmp_path / "model.py").write_text(MODEL)
        lsp.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=(tmp_path / "model.py").as_uri(), type=types.FileChangeType.Created)
                ]
            )
        )
        await lsp.eventually(policies, lambda d: [x.code for x in d] == ["JAX101"])


async def test_hover_on_a_policy_at_its_site_and_its_def(server, tmp_path):
    text = POLICIES + "\n\n" + MODEL.replace("from policies import offload_dots\n", "")
    async with server.in_folder(tmp_path) as lsp:
        uri = lsp.open("model.py", text)
        await lsp.diagnostics(uri)
        for occurrence in (0, 1):
            at = position_of(text, "offload_dots", lsp.encoding, occurrence)
            at.character += 3
            hover = await lsp.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), at)
            )
            assert hover.contents.kind == types.MarkupKind.Markdown
            assert "offload_dots" in hover.contents.value
            assert "line 3" in hover.contents.value and "None" in hover.contents.value
        nothing = position_of(text, "jax", lsp.encoding)
        assert (
            await lsp.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), nothing)
            )
            is None
        )


async def test_hover_on_a_noqa_code_shows_the_rules_docs(server, tmp_path):
    text = 'x = "é中😀"  # noqa: JAX101, JAX104\n'
    async with server.in_folder(tmp_path) as lsp:
        uri = lsp.open("model.py", text)
        await lsp.diagnostics(uri)
        at = position_of(text, "JAX104", lsp.encoding)
        hover = await lsp.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), at)
        )
        assert hover.contents.value.startswith("# JAX104")
        assert hover.range.start == at


async def test_hover_on_a_built_in_policy_says_what_it_saves(lsp):
    text = "import jax\n\ng = jax.checkpoint(abs, policy=jax.checkpoint_policies.dots_saveable)\n"
    uri = lsp.open("model.py", text)
    await lsp.diagnostics(uri)
    at = position_of(text, "dots_saveable", lsp.encoding)
    hover = await lsp.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), at)
    )
    assert "jax.checkpoint_policies.dots_saveable" in hover.contents.value
    assert "dot_general" in hover.contents.value


async def test_a_package_below_the_workspace_folder_resolves_and_src_finds_the_rest(profile, tmp_path):
    """A monorepo: `research/proj/pkg/model.py` imports `pkg.policies` (found as jedi's smart
    sys path would) and `shared_policies` from `libs/`, a folder named only in the `src` setting."""
    pkg = tmp_path / "research" / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "libs").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "policies.py").write_text(POLICIES)
    (tmp_path / "libs" / "shared_policies.py").write_text(POLICIES.replace("offload_dots", "shared"))
    (pkg / "model.py").write_text(
        MODEL.replace("from policies import", "from pkg.policies import")
        + "\nfrom shared_policies import shared\ng = jax.checkpoint(lambda y: y, policy=shared)\n"
    )
    async with start_session(profile, tmp_path, configuration={"src": [".", "libs"]}) as lsp:
        policies = lsp.open("research/proj/pkg/policies.py")
        [diagnostic] = await lsp.eventually(policies, lambda d: len(d) == 1)
        assert diagnostic.code == "JAX101"
        shared = lsp.open("libs/shared_policies.py")
        [diagnostic] = await lsp.eventually(shared, lambda d: len(d) == 1)
        assert diagnostic.code == "JAX101"


async def test_a_notebook_on_disk_is_indexed_like_a_module(server, tmp_path):
    import json

    cells = [
        "!pip install -q jax\nimport jax\n\nfrom policies import offload_dots",
        "%time\nf = jax.checkpoint(lambda y: y * 2, policy=offload_dots)",
    ]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": c.splitlines(True),
            }
            for c in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "policies.py").write_text(POLICIES)
    (tmp_path / "train.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    async with server.in_folder(tmp_path) as lsp:
        uri = lsp.open("policies.py")
        [diagnostic] = await lsp.eventually(uri, lambda d: len(d) == 1)
        assert diagnostic.code == "JAX101"
        assert [r.location.uri for r in diagnostic.related_information or []] == [
            (tmp_path / "train.ipynb").as_uri()
        ]
