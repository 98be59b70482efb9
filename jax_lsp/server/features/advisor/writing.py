"""The quick fix "Write a policy for B" on LSP's side: its code action at an advised site (where
`suggested.write_offer` offers it), which runs `jax-lsp.writePolicy`, and the written policy's
edits applied through workspace/applyEdit once that command has written one that fits."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from jax_lsp.server.documents import path_to_uri
from jax_lsp.server.edits import edits_in_workspace
from jax_lsp.server.features.advisor.advised import Advised
from jax_lsp.server.features.advisor.shown import WRITE
from jax_lsp.server.features.advisor.suggested import unsaved_files
from jax_lsp.trace.advisor.write.written import WrittenPolicy

if TYPE_CHECKING:
    from jax_lsp.server.places import Place
    from jax_lsp.server.server import JaxLanguageServer


def write_action(title: str, found: Advised, place: Place) -> types.CodeAction:
    """The quick fix that runs the write command on the site (its edits come when it is done)."""
    start = place.range(found.span).start
    arguments = [place.uri, {"line": start.line, "character": start.character}]
    command = types.Command(title=title, command=WRITE, arguments=arguments)
    return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, command=command)


async def apply_written(ls: JaxLanguageServer, outcome: WrittenPolicy) -> None:
    """The written policy's edits applied through workspace/applyEdit, unless a file they edit
    has unsaved changes (they were made from the files on disk)."""

    def buffer_text(path: str) -> str | None:
        document = ls.document(path_to_uri(path))
        return document.source if document is not None else None

    unsaved = unsaved_files(outcome.edits, buffer_text)
    if unsaved:
        names = ", ".join(Path(p).name for p in unsaved)
        message = f"Save {names} first: the written policy was made from the files on disk"
        ls.notify_user(message, types.MessageType.Warning)
        return
    edit = edits_in_workspace(ls, outcome.edits)
    await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=outcome.label))
