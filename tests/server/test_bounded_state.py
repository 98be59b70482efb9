"""What the server keeps is bounded by what is open, not by how often it changed.

The server runs in this process so that what it holds can be counted; its messages are JSON
text, read by pygls as it reads them from stdin (`json.loads` with the protocol's
`structure_message`) and handled by the protocol; what it sends is collected.
"""

from __future__ import annotations

import asyncio
import gc
import json
from concurrent.futures import Future
from pathlib import Path

from jax_lsp.core.findings import InternalError
from jax_lsp.engine import Workspace
from jax_lsp.server import create_server
from jax_lsp.server.registry import LanguageFeature
from jax_lsp.server.server import LOGGED_ERRORS_KEPT

TEXT = "import jax\n\n\ndef f(x):\n    return jax.checkpoint(lambda y: y, policy=None)(x)\n"


class Sent:
    """pygls' writer interface: what the server sends, kept as JSON messages."""

    def __init__(self) -> None:
        self.messages: list[dict] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


class InProcessServer:
    def __init__(self, root: Path, capabilities: dict | None = None) -> None:
        self.server = create_server()
        self.sent = Sent()
        self.server.protocol.set_writer(self.sent)
        self.next_id = 0
        self.request("initialize", {"rootUri": root.as_uri(), "capabilities": capabilities or {}})
        self.notify("initialized", {})

    def receive(self, message: dict) -> None:
        protocol = self.server.protocol
        body = json.dumps({"jsonrpc": "2.0", **message})
        protocol.handle_message(json.loads(body, object_hook=protocol.structure_message))

    def notify(self, method: str, params: dict) -> None:
        self.receive({"method": method, "params": params})

    def request(self, method: str, params: dict) -> None:
        self.next_id += 1
        self.receive({"id": self.next_id, "method": method, "params": params})

    async def answer(self, method: str) -> None:
        """Answer the server's next request of `method` (with a null result)."""
        for _ in range(500):
            asked = [m for m in self.sent.messages if m.get("method") == method and "id" in m]
            if asked:
                self.sent.messages.remove(asked[0])
                self.receive({"id": asked[0]["id"], "result": None})
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the server sent no {method} request")

    def stop(self) -> None:
        self.server.stop_background_work()


def live_futures() -> int:
    gc.collect()
    return sum(isinstance(thing, (Future, asyncio.Future)) for thing in gc.get_objects())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


async def test_handled_notifications_leave_no_future_behind(tmp_path: Path):
    lsp = InProcessServer(tmp_path)
    uri = (tmp_path / "model.py").as_uri()
    item = {"uri": uri, "languageId": "python", "version": 1, "text": TEXT}
    lsp.notify("textDocument/didOpen", {"textDocument": item})

    def edit(version: int) -> None:
        where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": version % 2}}
        change = {"range": where, "text": "" if version % 2 else "#"}
        lsp.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )

    try:
        for version in range(2, 22):
            edit(version)
        await settle()
        before = live_futures()
        for version in range(22, 222):
            edit(version)
        lsp.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        )
        await settle()
        assert live_futures() - before < 20  # pygls 2.1 alone keeps one per didChange
        lsp.request("shutdown", {})  # it cancels the pending ones while it iterates over them
        await settle()
        answer = next(m for m in lsp.sent.messages if m.get("id") == lsp.next_id)
        assert "error" not in answer, answer
    finally:
        lsp.stop()


class FinishedJob:
    """What `run_job` needs of an agent job (trace, advise): its answer, here already there."""

    def __init__(self) -> None:
        self.future: Future[str] = Future()
        self.future.set_result("answer")

    def cancel(self) -> None:
        pass


async def test_a_job_under_progress_leaves_no_progress_token_behind(tmp_path: Path):
    lsp = InProcessServer(tmp_path, {"window": {"workDoneProgress": True}})
    feature = LanguageFeature(lsp.server)
    progress = lsp.server.work_done_progress
    try:
        await lsp.answer("window/workDoneProgress/create")  # the index's progress
        for _ in range(3):
            job = asyncio.ensure_future(feature.run_job(FinishedJob, "trace", "tracing", None, progress=True))
            await lsp.answer("window/workDoneProgress/create")
            assert await job == "answer"
        ends = [
            m
            for m in lsp.sent.messages
            if m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end"
        ]
        assert len(ends) >= 3
        await asyncio.wait_for(lsp.server.index_task, 60)
        assert progress.tokens == {}  # pygls keeps each token until it is removed
    finally:
        lsp.stop()


async def test_the_analysis_bugs_logged_once_each_are_remembered_up_to_a_bound(tmp_path: Path):
    server = create_server()
    server.analysis = Workspace([tmp_path])
    try:
        for line in range(LOGGED_ERRORS_KEPT + 200):  # a site with a bug, moved down a line an edit
            error = InternalError(str(tmp_path / "model.py"), line, "resolving the site", "TypeError: ...")
            server.analysis.internal_errors.append(error)
            await server.run_analysis(lambda: None)
        assert len(server._logged_internal_errors) <= LOGGED_ERRORS_KEPT
    finally:
        server.stop_background_work()
