"""Background work (the workspace index) waits for the checks of open buffers, never the reverse."""

from __future__ import annotations

import asyncio
import threading
import time

from lsp_harness import start_session
from lsprotocol import types

from jax_lsp.server import create_server

URI = "file:///tmp/jax-lsp-background/edited.py"


def wait_in_thread(checker, idle_s: float, at_most_s: float) -> tuple[threading.Thread, list[float]]:
    """Run ``checker.wait_until_quiet`` as the index's thread does; the list gets when it returned."""
    returned: list[float] = []

    def wait() -> None:
        checker.wait_until_quiet(idle_s, at_most_s)
        returned.append(time.monotonic())

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread, returned


async def test_background_work_waits_until_no_check_has_been_pending_for_a_while():
    checker = create_server().checker
    checker.schedule(URI)  # pending: the settings are never read here
    thread, returned = wait_in_thread(checker, idle_s=0.1, at_most_s=30)
    await asyncio.sleep(0.5)
    assert returned == []
    cancelled = time.monotonic()
    checker.cancel(URI)
    await asyncio.to_thread(thread.join, 10)
    assert returned and 0.1 <= returned[0] - cancelled < 5


async def test_checks_without_a_pause_still_let_background_work_go_on():
    checker = create_server().checker
    checker.schedule(URI)
    started = time.monotonic()
    thread, returned = wait_in_thread(checker, idle_s=0.1, at_most_s=0.3)
    await asyncio.to_thread(thread.join, 10)
    assert returned and 0.3 <= returned[0] - started < 5
    checker.cancel(URI)


async def test_shutting_down_lets_waiting_background_work_go_on_at_once():
    server = create_server()
    server.checker.schedule(URI)
    thread, returned = wait_in_thread(server.checker, idle_s=0.1, at_most_s=30)
    await asyncio.sleep(0.2)
    stopped = time.monotonic()
    server.stop_background_work()
    await asyncio.to_thread(thread.join, 10)
    assert returned and returned[0] - stopped < 5


POLICIES = """# edited below
def offload_dots(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
"""

SITE = """import jax

from policies import offload_dots


def f(x):
    return jax.checkpoint(lambda y: y * 2, policy=offload_dots)(x)
"""

FILLER = """import jax


def f_{n}(x):
    return jax.checkpoint(lambda y: y + {n}, policy=jax.checkpoint_policies.dots_saveable)(x)
"""


TYPING_S = 3
# Enough files that the index, held back, cannot finish while the test opens the file and types,
# even on a loaded machine; unhindered it indexes them in a few seconds.
FILLER_FILES = 1000


async def test_edits_are_answered_while_the_index_runs_and_it_finishes_once_typing_stops(profile, tmp_path):
    for n in range(FILLER_FILES):
        (tmp_path / f"filler_{n:03}.py").write_text(FILLER.format(n=n))
    (tmp_path / "site.py").write_text(SITE)
    (tmp_path / "policies.py").write_text(POLICIES)
    async with start_session(profile, tmp_path) as lsp:
        uri = lsp.open("policies.py")
        await lsp.diagnostics(uri)
        end_of_comment = types.Position(0, len("# edited below"))
        index_reports = [r for token, r in lsp.client.progress_reports.items() if "index" in str(token)]
        if lsp.client.capabilities.window.work_done_progress:
            assert [r.kind for r in index_reports[0][-1:]] != ["end"], (
                "add files: the index ended before typing"
            )
        typing_until = time.monotonic() + TYPING_S
        while time.monotonic() < typing_until:  # a keystroke every 50 ms, each answered
            lsp.change(uri, end_of_comment, end_of_comment, "!")
            await lsp.diagnostics(uri)
            await asyncio.sleep(0.05)
        index_reports = [r for token, r in lsp.client.progress_reports.items() if "index" in str(token)]
        if lsp.client.capabilities.window.work_done_progress:
            assert [r.kind for r in index_reports[0][-1:]] != ["end"]  # the index waited for the edits
        [diagnostic] = await lsp.eventually(uri, lambda d: len(d) == 1)  # ... then found the site
        assert diagnostic.code == "JAX101"
        assert [r.location.uri for r in diagnostic.related_information or []] == [
            (tmp_path / "site.py").as_uri()
        ]
