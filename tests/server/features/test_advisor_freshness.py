"""The advisor's answer in the editor stays tied to the text it describes (stale at an edit,
fresh after a save), suggests only for a budget, says what it did in the log and the hover,
and hints on the checkpointed function's lines. Real server, real LSP, real JAX."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.agent import needs_linux
from tests.server.features.test_advisor import (
    ADVISE,
    _advise_lenses,
    _execute,
    _hints,
    _mlp,
    _open_and_advise,
    _quick_fixes,
    _until_title,
)
from tests.server.lsp_harness import position_of, until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

EDITED = "Advise policy again: the site changed since it was advised"
FROM_DISK = "Advise policy again: advised from the file on disk, not this buffer: save to advise again"


def _advise_began(session):
    async def began():
        reports = session.client.progress_reports.values()
        return any(r.kind == "begin" and "advise" in r.title for found in reports for r in found)

    return began


async def _one_lens(session, uri):
    [lens] = await _advise_lenses(session, uri)
    return lens


def _saved(session, uri, text):
    """The buffer written to disk and saved, as an editor does."""
    (session.root / uri.rsplit("/", 1)[1]).write_text(text, encoding="utf-8")
    session.client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
    )


async def _hover(session, uri, position):
    hover = await session.client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    )
    return hover.contents.value if hover is not None else ""


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_an_edit_of_the_site_makes_the_advice_stale_and_the_save_advises_again(server, tmp_path):
    text = _mlp()
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": "6KiB"}}) as session:
        uri, _ = await _open_and_advise(session, "mlp.py", text)
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert "recomputes 0" in lens.command.title  # dots_saveable
        start = position_of(text, "dots_saveable)", session.encoding)
        end = types.Position(start.line, start.character + len("dots_saveable"))
        session.client.advice_changes = []
        session.change(uri, start, end, "nothing_saveable")

        stale = await _one_lens(session, uri)  # at once: no figures of a policy no longer written
        assert (stale.command.title, stale.command.command) == (EDITED, "jax-lsp.advisePolicy")
        assert not await _hints(session, uri)
        assert not await _quick_fixes(session, uri, session.texts[uri], "nothing_saveable")
        assert "Outdated: the site changed since it was advised." in await _hover(session, uri, start)

        _saved(session, uri, session.texts[uri])  # the save advises the site again, unasked
        [fresh] = await until(
            lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies") and "kFLOP" in t)
        )
        compared = await _execute(session, "jax-lsp.comparePolicies", fresh.command.arguments)
        assert "| current | `nothing_saveable` |" in compared["markdown"] and compared["stale"] is None
        # a view of the advice (VS Code's Compare panel) heard of both changes, at the site
        changes = [
            (c.uri, c.position.line, c.position.character, c.stale) for c in session.client.advice_changes
        ]
        at = (uri, fresh.range.start.line, fresh.range.start.character)
        assert changes == [(*at, "the site changed since it was advised"), (*at, None)]


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_advice_of_the_disk_while_the_buffer_differs_says_so_until_saved(server, tmp_path):
    text = _mlp()
    async with server.in_folder(tmp_path) as session:
        uri = session.write("mlp.py", text)
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        session.change(uri, types.Position(0, 0), types.Position(0, 0), "# not saved yet ")  # no line moves
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t == "Advise policy"))
        await _execute(session, "jax-lsp.advisePolicy", lens.command.arguments)
        assert (await _one_lens(session, uri)).command.title == FROM_DISK
        compared = await _execute(session, "jax-lsp.comparePolicies", lens.command.arguments)
        assert compared["stale"] == FROM_DISK.removeprefix("Advise policy again: ")

        _saved(session, uri, session.texts[uri])
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_a_save_forgets_advice_it_cannot_renew(server, tmp_path):
    """Without an example any more, a save drops the site's stale advice: the lens asks for one."""
    text = _mlp()
    async with server.in_folder(tmp_path) as session:
        uri, _ = await _open_and_advise(session, "mlp.py", text)
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        comment = position_of(text, "  # jax-lsp: example", session.encoding)
        end = types.Position(comment.line, comment.character + len("  # jax-lsp: example=mlp.py:example"))
        session.change(uri, comment, end, "")
        assert (await _one_lens(session, uri)).command.title == EDITED
        _saved(session, uri, session.texts[uri])
        await until(
            lambda: _until_title(session, uri, lambda t: t.startswith("Advise policy: give an example"))
        )


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_no_budget_no_suggestion_and_the_hover_and_log_say_what_was_advised(server, tmp_path):
    """nothing_saveable with no budget: the current peak once made the budget, and offloading
    (recompute 0, host transfers unpriced) was suggested; now nothing is, and the hover says why."""
    text = _mlp(policy="nothing_saveable")
    async with server.in_folder(tmp_path) as session:
        uri, result = await _open_and_advise(session, "mlp.py", text)
        assert result["suggested"] is None
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert not await _quick_fixes(session, uri, text, "nothing_saveable")
        site = position_of(text, "jax.checkpoint_policies.nothing_saveable", session.encoding)
        hover = await _hover(session, uri, site)
        assert hover.startswith("**jax-lsp advice** (cpu, jax ")
        assert "- current `nothing_saveable`: saves 3 arrays: 0 B computed, 4.5 KiB of arguments" in hover
        assert "- no suggestion: set `advise.budget` (e.g. `24GiB`) to get one" in hover
        logged = [m.message for m in session.client.log_messages if "Advised " in m.message]
        line = site.line + 1
        assert len(logged) == 1 and logged[0].startswith(
            f"INFO Advised mlp.py:{line} (example mlp.py:example) in "
        )
        assert "recomputes 16.4 kFLOP · peak (est.) 5.5 KiB · jax " in logged[0]
        assert logged[0].endswith(", cpu")


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_closing_the_file_stops_its_advise_and_keeps_nothing_of_it(server, tmp_path):
    """A file closed while its site is advised: the advise stops (its trace killed), nothing of
    it is kept or logged as advised, and the file opened again asks to be advised."""
    text = _mlp()
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": "6KiB"}}) as session:
        uri = session.write("mlp.py", text)
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        asked = asyncio.ensure_future(_execute(session, ADVISE, lens.command.arguments))
        await until(_advise_began(session))  # its trace still imports JAX
        session.close(uri)
        result = await asyncio.wait_for(asked, 60)
        assert result["error"]["status"] == "cancelled"
        assert not [m.message for m in session.client.log_messages if "Advised " in m.message]
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        assert lens.command.title == "Advise policy"


STEP = """import jax
import jax.numpy as jnp


def mlp(x, w1, w2):
    h = jnp.tanh(x @ w1)
    return jnp.sin(h @ w2)


block = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)  # jax-lsp: example=step.py:example


def loss(x, w0, w1, w2):
    x = jnp.sin(x @ w0)
    return jnp.sum(block(x, w1, w2) ** 2)


def example():
    f32 = jnp.float32
    shapes = ((8, 16), (16, 16), (16, 32), (32, 16))
    return {"fn": loss, "args": tuple(jax.ShapeDtypeStruct(s, f32) for s in shapes)}
"""


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_hints_mark_what_the_policy_saves_and_count_the_rest_on_the_site(server, tmp_path):
    """The matmuls the policy saves get hints on mlp's lines; the step's value made outside the
    checkpoint (`x = jnp.sin(x @ w0)`, the block's input) is kept whatever the policy: counted on
    the site's line, never called saved on its own."""
    async with server.in_folder(tmp_path) as session:
        uri, result = await _open_and_advise(session, "step.py", STEP)
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        lines = STEP.split("\n")
        current = next(p for p in result["policies"] if p["current"])
        function = range(lines.index("def mlp(x, w1, w2):"), lines.index("    return jnp.sin(h @ w2)") + 1)
        saved = {r["line"] - 1 for r in current["residuals"] if r["reason"] == "policy"}
        kept = [r for r in current["residuals"] if r["line"] and r["reason"] not in ("policy", "named")]
        made = lines.index("    x = jnp.sin(x @ w0)")
        assert saved and saved <= set(function) and any(r["line"] - 1 == made for r in kept)
        hints = {h.position.line: h for h in await _hints(session, uri)}
        site = next(i for i, line in enumerate(lines) if "policy=" in line)
        assert set(hints) == saved | {site} and made not in hints
        assert all(hints[line].label.startswith(" saved ") for line in saved)
        assert hints[site].label.startswith(f" +{len(kept)} kept anyway ")
        assert "kept whatever the policy says, never saved by it" in hints[site].tooltip.value
