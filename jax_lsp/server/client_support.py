"""What the client can do, read once from its capabilities at `initialize` into a record
(`JaxLanguageServer.client_support`): no other module reads a capability by its dotted name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types


def _has(capabilities: Any, dotted: str) -> bool:
    for name in dotted.split("."):
        capabilities = getattr(capabilities, name, None)
        if capabilities is None:
            return False
    return bool(capabilities)


@dataclass(frozen=True)
class ClientSupport:
    """A client that said nothing (before `initialize`) supports nothing."""

    configuration: bool = False  # answers workspace/configuration
    configuration_registration: bool = False  # takes a dynamic didChangeConfiguration registration
    watched_files_registration: bool = False  # takes a dynamic didChangeWatchedFiles registration
    work_done_progress: bool = False  # shows server-initiated $/progress
    document_changes: bool = False  # takes a WorkspaceEdit's documentChanges (with versions)
    code_lens_refresh: bool = False
    inlay_hint_refresh: bool = False
    # Pulls diagnostics, and can be told to pull again (after another file changed, the index
    # finished or a trace ran); every other client gets pushed diagnostics.
    pull_diagnostics: bool = False

    @classmethod
    def read(cls, capabilities: types.ClientCapabilities) -> ClientSupport:
        return cls(
            configuration=_has(capabilities, "workspace.configuration"),
            configuration_registration=_has(
                capabilities, "workspace.did_change_configuration.dynamic_registration"
            ),
            watched_files_registration=_has(
                capabilities, "workspace.did_change_watched_files.dynamic_registration"
            ),
            work_done_progress=_has(capabilities, "window.work_done_progress"),
            document_changes=_has(capabilities, "workspace.workspace_edit.document_changes"),
            code_lens_refresh=_has(capabilities, "workspace.code_lens.refresh_support"),
            inlay_hint_refresh=_has(capabilities, "workspace.inlay_hint.refresh_support"),
            pull_diagnostics=_has(capabilities, "text_document.diagnostic")
            and _has(capabilities, "workspace.diagnostics.refresh_support"),
        )
