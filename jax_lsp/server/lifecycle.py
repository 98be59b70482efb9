"""initialize / initialized / shutdown, and exiting when the editor that started us dies."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.server import logs
from jax_lsp.server.client_support import ClientSupport
from jax_lsp.server.configuration import reload
from jax_lsp.server.diagnostics import pull
from jax_lsp.server.indexing import register_watchers
from jax_lsp.server.logs import log

if TYPE_CHECKING:
    from jax_lsp.server.server import JaxLanguageServer

PARENT_POLL_S = 3.0


def process_alive(pid: int) -> bool:
    if sys.platform == "win32":
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        ctypes.windll.kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        ctypes.windll.kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True


async def watch_parent(ls: JaxLanguageServer, pid: int) -> None:
    while not ls.shutting_down:
        await asyncio.sleep(PARENT_POLL_S)
        if not process_alive(pid):
            log.warning("The editor (process %d) is gone: exiting", pid)
            ls.stop_background_work()
            # The protocol loop is blocked reading a stdin nobody will close: leave now.
            os._exit(1)


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: JaxLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.init_options = options if isinstance(options, dict) else {}
        ls.client_support = ClientSupport.read(params.capabilities)
        if ls.pull_diagnostics:
            ls.feature(
                types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(
                    identifier="jax-lsp", inter_file_dependencies=True, workspace_diagnostics=False
                ),
            )(pull)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: JaxLanguageServer, params: types.InitializedParams) -> None:
        logs.attach_client(ls)
        log.info(
            "jax-lsp %s, %s diagnostics, %s positions",
            ls.version,
            "pull" if ls.pull_diagnostics else "push",
            getattr(ls.workspace.position_encoding, "value", ls.workspace.position_encoding),
        )
        if ls.process_id:
            ls.parent_watch = asyncio.ensure_future(watch_parent(ls, ls.process_id))
        if ls.client_support.configuration_registration:
            try:
                await ls.client_register_capability_async(
                    types.RegistrationParams(
                        registrations=[
                            types.Registration(
                                id="jax-lsp-configuration", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION
                            )
                        ]
                    )
                )
            except Exception as exc:
                log.debug("Registering for configuration changes failed: %s", exc)
        await reload(ls)
        await register_watchers(ls)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: JaxLanguageServer, params: None) -> None:
        ls.shutdown_requested = True
        ls.stop_background_work()
