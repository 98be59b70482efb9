"""The workspace index: built in the background with $/progress, kept current from disk."""

from __future__ import annotations

import asyncio
import gc
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.server.configuration import reload
from jax_lsp.server.documents import path_to_uri, uri_to_path
from jax_lsp.server.logs import log
from jax_lsp.server.registry import LanguageFeature

if TYPE_CHECKING:
    from pathlib import Path

    from jax_lsp.engine import Workspace
    from jax_lsp.server.server import JaxLanguageServer

WATCHERS = [
    types.FileSystemWatcher(glob_pattern=pattern)
    for pattern in ("**/*.py", "**/*.ipynb", "**/pyproject.toml")
]
# The workspace index goes on once no buffer has been checked for this long (it holds the GIL
# and the analysis' lock for a file at a time), and under sustained typing after this at most.
INDEX_IDLE_S = 0.2
INDEX_WAIT_AT_MOST_S = 2.0
# The index's modules live until their files change, and refcounting frees them then (indexing
# maxtext's 385 files leaves 18 objects in cycles): every this many files, what is loaded is moved
# out of the cyclic GC's reach. Else each full collection while typing walks every tree indexed
# so far (0.3 to 0.8 s on maxtext, every few keystrokes).
FREEZE_EVERY_FILES = 20


class WorkspaceIndex(LanguageFeature):
    """Indexes each new workspace in the background, the previous index cancelled."""

    def analysis_built(self) -> None:
        ls = self.server
        previous = ls.index_task
        if previous is not None and not previous.done():
            previous.cancel()
        if ls.analysis is not None:
            ls.index_task = asyncio.ensure_future(_index(ls, ls.analysis))


async def _index(ls: JaxLanguageServer, analysis: Workspace) -> None:
    loop = asyncio.get_running_loop()
    token = f"jax-lsp-index-{uuid.uuid4().hex[:8]}"
    progress = ls.work_done_progress
    shown = False
    if ls.client_support.work_done_progress:
        try:
            await progress.create_async(token)
            progress.begin(
                token,
                types.WorkDoneProgressBegin(
                    title="jax-lsp: indexing policy sites", percentage=0, cancellable=True
                ),
            )
            shown = True
        except Exception as exc:
            log.debug("No progress bar: %s", exc)
    last = [-1]

    def report(done: int, total: int) -> None:  # on the index's thread, after each file
        if done % FREEZE_EVERY_FILES == 0 or done == total:
            gc.freeze()
        percentage = 100 * done // total if total else 100
        if shown and percentage != last[0]:
            last[0] = percentage
            message = f"{done}/{total} files"
            loop.call_soon_threadsafe(
                progress.report, token, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )

    cancel = progress.tokens.get(token) if shown else None

    def cancelled() -> bool:  # asked before each file: the open buffers' checks go first
        ls.checker.wait_until_quiet(INDEX_IDLE_S, INDEX_WAIT_AT_MOST_S)
        return ls.shutting_down or ls.analysis is not analysis or (cancel is not None and cancel.cancelled())

    message = "done"
    try:
        await loop.run_in_executor(
            ls.index_thread, lambda: analysis.index(progress=report, cancelled=cancelled)
        )
    except asyncio.CancelledError:
        message = "cancelled"
        raise
    except Exception:
        message = "failed (see the log)"
        log.exception("Indexing the workspace failed")
    finally:
        if shown:
            progress.end(token, types.WorkDoneProgressEnd(message=message))
            progress.tokens.pop(token, None)
    log.info("Workspace index %s", message)
    if ls.analysis is analysis and not cancelled():
        ls.checker.schedule_all()


async def register_watchers(ls: JaxLanguageServer) -> None:
    if not ls.client_support.watched_files_registration:
        log.info("The client cannot watch files for us: the index follows open buffers and saves only")
        return
    registration = types.Registration(
        id="jax-lsp-watchers",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=WATCHERS),
    )
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as exc:
        log.warning("Registering file watchers failed: %s", exc)


def _files_changed(analysis: Workspace, paths: list[Path]) -> set[Path]:
    affected: set[Path] = set()
    for path in paths:
        analysis.file_changed(path)
        affected |= analysis.affected_files(path)
        affected.add(path)
    return affected


def register(server: JaxLanguageServer) -> None:
    server.add_feature(WorkspaceIndex(server))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(
        ls: JaxLanguageServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        paths = [p for change in params.changes if (p := uri_to_path(change.uri)) is not None]
        if any(p.name == "pyproject.toml" for p in paths):
            await reload(ls)
        sources = [p for p in paths if p.suffix in (".py", ".pyi", ".ipynb")]  # a notebook's sites count too
        if not sources or ls.analysis is None:
            return
        try:
            affected = await ls.run_analysis(_files_changed, ls.analysis, sources)
        except Exception:
            log.exception("Updating the index failed")
            return
        ls.checker.schedule_all({path_to_uri(p) for p in affected})
