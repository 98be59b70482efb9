"""Reading the settings (initializationOptions, workspace/configuration, [tool.jax-lsp])
and rebuilding the analysis when they change what it analyses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from jax_lsp.server import logs
from jax_lsp.server.documents import analysis_key, uri_to_path
from jax_lsp.server.logs import log
from jax_lsp.server.settings import ServerSettings, resolve

if TYPE_CHECKING:
    from jax_lsp.engine import Workspace
    from jax_lsp.server.server import JaxLanguageServer

SECTION = "jax-lsp"
# A client that never answers workspace/configuration must not keep the server silent forever.
CONFIGURATION_TIMEOUT_S = 5.0


async def editor_settings(ls: JaxLanguageServer, pushed: Any = None) -> Any:
    """The client's `jax-lsp` section: asked for when the client can answer, else what it sent."""
    if ls.client_support.configuration:
        scope = ls.workspace.root_uri
        try:
            reply = await asyncio.wait_for(
                ls.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(section=SECTION, scope_uri=scope)]
                    )
                ),
                CONFIGURATION_TIMEOUT_S,
            )
        except Exception as exc:
            log.warning("workspace/configuration failed (%s); using initializationOptions", exc)
        else:
            if reply and reply[0] is not None:
                return reply[0]
    if isinstance(pushed, dict) and SECTION in pushed:
        return pushed[SECTION]
    return ls.init_options.get("settings")


def workspace_roots(ls: JaxLanguageServer) -> list[Path]:
    roots = [uri_to_path(folder.uri) for folder in ls.workspace.folders.values()]
    if not roots and ls.workspace.root_uri:
        roots = [uri_to_path(ls.workspace.root_uri)]
    return [root for root in roots if root is not None]


def _build_analysis(roots: list[Path], settings: ServerSettings, buffers: dict[Path, str]) -> Workspace:
    from jax_lsp.engine import Workspace

    analysis = Workspace(
        roots=roots, settings=settings.core, interpreter=settings.interpreter, jedi_in_background=True
    )
    for path, text in buffers.items():
        analysis.set_document(path, text)
    return analysis


async def reload(ls: JaxLanguageServer, pushed: Any = None) -> None:
    """Read the settings again and apply them; never raises."""
    try:
        editor = await editor_settings(ls, pushed)
        roots = workspace_roots(ls)
        trusted = ls.init_options.get("trusted", True) is not False
        settings, problems = resolve(editor, roots, trusted)
        await apply(ls, settings, problems, roots)
    except Exception:
        log.exception("Applying the settings failed; keeping the previous ones")
        ls.settings_ready.set()


async def apply(
    ls: JaxLanguageServer, settings: ServerSettings, problems: list[str], roots: list[Path]
) -> None:
    previous, ls.settings = ls.settings, settings
    logs.set_level(settings.log_level)
    if problems and problems != ls.settings_problems:
        ls.notify_user("invalid settings, their defaults apply instead: " + "; ".join(problems))
    ls.settings_problems = problems
    rebuild = (
        ls.analysis is None
        or roots != ls.roots
        or previous.core != settings.core
        or previous.interpreter != settings.interpreter
    )
    if rebuild:
        ls.roots = roots
        buffers = {
            p: d.source
            for d in ls.open_documents()
            if (p := analysis_key(d.uri)) and ls.workspace.get_notebook_document(cell_uri=d.uri) is None
        }
        ls.analysis = await ls.run_analysis(_build_analysis, roots, settings, buffers)
        log.info(
            "Settings: select=%s ignore=%s interpreter=%s pyproject=%s",
            settings.core.select,
            settings.core.ignore,
            settings.interpreter or "(the server's)",
            settings.pyproject or "-",
        )
    ls.settings_ready.set()
    if rebuild:
        ls.checker.schedule_all()
        ls.features.analysis_built()
    if settings != previous:
        ls.features.settings_changed(previous)


def register(server: JaxLanguageServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: JaxLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        await reload(ls, params.settings)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(
        ls: JaxLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        await reload(ls)  # new roots: a new analysis and a new index
