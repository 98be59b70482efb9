"""Starting, stopping and dying: exit codes per the spec, and no orphan when the editor dies."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from lsp_harness import TIMEOUT_S, start_session


async def test_exit_after_shutdown_is_code_0(tmp_path):
    async with start_session("neovim", tmp_path) as lsp:
        server = lsp.client._server
    assert await asyncio.wait_for(server.wait(), TIMEOUT_S) == 0


async def test_exit_without_shutdown_is_code_1(tmp_path):
    async with start_session("neovim", tmp_path) as lsp:
        server = lsp.client._server
        lsp.client.exit(None)
        assert await asyncio.wait_for(server.wait(), TIMEOUT_S) == 1
        lsp.client.capabilities = None  # nothing left to shut down


async def test_server_exits_when_its_parent_dies(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        async with start_session("vscode", tmp_path, process_id=parent.pid) as lsp:
            server = lsp.client._server
            uri = lsp.open("a.py", "x = 1\n")
            assert await lsp.diagnostics(uri) == []
            parent.kill()
            parent.wait()
            started = time.monotonic()
            await asyncio.wait_for(server.wait(), TIMEOUT_S)
            assert time.monotonic() - started < 10
            lsp.client.capabilities = None
    finally:
        parent.kill()


async def test_logs_reach_the_client_log(tmp_path):
    async with start_session("emacs", tmp_path) as lsp:
        uri = lsp.open("a.py", "x = 1\n")
        await lsp.diagnostics(uri)
        assert any("jax-lsp" in m.message and "utf-32" in m.message for m in lsp.client.log_messages)
        assert lsp.client.messages == []
