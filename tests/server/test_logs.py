"""The server's log once the client has gone (jax_lsp/server/logs.py)."""

from __future__ import annotations

from tests.server.lsp_harness import start_session


async def test_a_send_that_fails_after_exit_is_logged_once_not_sent_again(tmp_path, capfd):
    """The client exits while the workspace is still indexed: what the server then sends (the
    index's progress, its log) fails on the closed stdout. pygls logs each failure; that record is
    not sent to the client in turn, which failed and logged again, hundreds of times over, for
    seconds of CPU at every exit."""
    async with start_session("neovim", tmp_path) as session:
        uri = session.write("model.py", "import jax\n\nf = jax.checkpoint(abs, policy=None)\n")
        session.open("model.py")
        await session.diagnostics(uri)
    server_log = capfd.readouterr().err
    assert server_log.count("I/O operation on closed file") < 20, server_log[-2000:]
