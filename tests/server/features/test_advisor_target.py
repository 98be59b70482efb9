"""The advisor in the editor on a TPU target (`advise.target`): the estimate at once, then the
compiled figures in its place, under a progress of their own (real LSP, real agent with libtpu
from JAX_LSP_LIBTPU_PYTHON, as tests/trace_agent/advisor/test_target.py's)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.agent import ADVISOR_FIXTURES, find_libtpu_python, needs_linux
from tests.server.features.test_advisor import ADVISE, COMPARE, _advise_lenses
from tests.server.lsp_harness import until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_on_a_tpu_target_the_lens_shows_the_estimate_then_the_compiled_peak(server, tmp_path):
    python = find_libtpu_python()
    text = (ADVISOR_FIXTURES / "mlp.py").read_text(encoding="utf-8")
    text = text.replace(
        "policy=jax.checkpoint_policies.dots_saveable)",
        "policy=jax.checkpoint_policies.dots_saveable)  # jax-lsp: example=mlp.py:example",
    )
    settings = {"interpreter": python, "advise": {"target": "v5e-1"}}
    async with server.in_folder(tmp_path, settings) as session:
        uri = session.write("mlp.py", text)
        session.open("mlp.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        arguments = lens.command.arguments
        titles: list[str] = []
        done = asyncio.Event()

        async def watch():  # the lens's titles while the command runs
            # Ends between requests: cancelling one in flight breaks the client on its late answer.
            while not done.is_set():
                for found in await _advise_lenses(session, uri):
                    if found.command.command == COMPARE and found.command.title not in titles:
                        titles.append(found.command.title)
                await asyncio.sleep(0.2)

        watcher = asyncio.create_task(watch())
        try:
            result = await asyncio.wait_for(
                session.client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=ADVISE, arguments=arguments)
                ),
                600,
            )
            await until(lambda: _titled(session, uri, "fits v5e-1"))
        finally:
            done.set()
            await watcher
        assert (
            result["compile_target"]["name"] == "v5e-1" and result["compile_target"]["topology"] == "v5e:1x1"
        )
        assert all(p["fits"] is True and p["compiled"]["peak_bytes"] > 0 for p in result["policies"])
        assert any("peak (est.)" in t for t in titles), titles  # the estimate came first
        [final] = await _titled(session, uri, "fits v5e-1")
        assert "compiled peak" in final.command.title
        reports = session.client.progress_reports.values()
        said = [r.message or "" for found in reports for r in found if r.kind in ("begin", "report")]
        assert any("compiled dots_saveable" in m for m in said), said  # the pipeline's compile step


async def _titled(session, uri, needle):
    return [lens for lens in await _advise_lenses(session, uri) if needle in lens.command.title] or None
