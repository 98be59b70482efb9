"""Drive the real server over stdio with pytest-lsp's client, under several editors' capabilities."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.agent import grew, shrank_to

SERVER_COMMAND = [sys.executable, "-m", "jax_lsp", "serve", "--log-level", "debug"]
TIMEOUT_S = 20


def vscode_capabilities() -> types.ClientCapabilities:
    """VS Code with vscode-languageclient 9: UTF-16 only, pull diagnostics with refresh."""
    caps = client_capabilities("visual-studio-code")
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(
        dynamic_registration=True, related_document_support=False
    )
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


# name -> (capabilities, negotiated encoding, pulls diagnostics)
PROFILES = {
    "vscode": (vscode_capabilities, "utf-16", True),
    "neovim": (lambda: client_capabilities("neovim@v0.11.0"), "utf-8", False),
    "emacs": (lambda: client_capabilities("emacs@v29.1"), "utf-32", False),
}


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in code units of an LSP position encoding."""
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le" if encoding == "utf-16" else "utf-8", "surrogatepass")) // (
        2 if encoding == "utf-16" else 1
    )


def position_of(text: str, needle: str, encoding: str, occurrence: int = 0) -> types.Position:
    """The LSP position of the start of ``needle`` in ``text``, computed independently of the server."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    before = text[:offset]
    line = before.count("\n")
    return types.Position(line=line, character=units(before[before.rfind("\n") + 1 :], encoding))


def apply_text_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """Apply LSP edits the way an editor does (from the last to the first)."""
    lines = text.split("\n")

    def offset(pos: types.Position) -> int:
        start = sum(len(text_line) + 1 for text_line in lines[: pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        count = 0
        for column, char in enumerate(line):
            if count >= pos.character:
                return start + column
            count += units(char, encoding)
        return start + len(line)

    for edit in in_application_order(edits):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
        lines = text.split("\n")
    return text


def in_application_order(edits: list[types.TextEdit]) -> list[types.TextEdit]:
    """Last first, so earlier positions stay valid; inserts at one point keep their array order."""
    order = sorted(
        enumerate(edits), key=lambda ie: (ie[1].range.start.line, ie[1].range.start.character, ie[0])
    )
    return [edit for _, edit in reversed(order)]


@dataclass
class Session:
    client: LanguageClient
    profile: str
    encoding: str
    pull: bool
    root: Path
    versions: dict[str, int] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    published: dict[str, tuple[int | None, list[types.Diagnostic]]] = field(default_factory=dict)
    publish_event: asyncio.Event = field(default_factory=asyncio.Event)
    history: list[types.PublishDiagnosticsParams] = field(default_factory=list)
    # The one-element list whose session the client's publishes go to: this one, or a test's view.
    receiver: list[Session] = field(default_factory=list)
    opened: set[str] = field(default_factory=set)

    async def indexed(self) -> None:
        """Wait until the client's log (cleared before the analysis was built) says its index ended."""

        async def logged() -> None:
            while not [m for m in self.client.log_messages if "Workspace index done" in m.message]:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(logged(), TIMEOUT_S)

    @contextlib.asynccontextmanager
    async def in_folder(self, root: Path, configuration: Any = None):
        """This session's server as one test's own: the workspace folder switched to ``root``,
        so a new analysis is built and indexed as at a server's start, with ``configuration`` as
        the client's `jax-lsp` section (None: none, the server's defaults); the view sees only
        what is published and said from then on, and its documents are closed after the test."""
        previous = self.receiver[0]
        self.client.set_configuration(configuration, section="jax-lsp")
        self.client.log_messages.clear()
        self.client.progress_reports.clear()
        self.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                    removed=[types.WorkspaceFolder(uri=previous.root.as_uri(), name=previous.root.name)],
                )
            )
        )
        await self.indexed()
        self.client.messages.clear()
        self.client.log_messages.clear()
        view = Session(self.client, self.profile, self.encoding, self.pull, root, receiver=self.receiver)
        self.receiver[0] = view
        try:
            yield view
        finally:
            for uri in list(view.opened):
                view.close(uri)

    def write(self, name: str, text: str) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path.as_uri()

    def open(self, name: str, text: str | None = None, language_id: str = "python") -> str:
        path = self.root / name
        if text is None:
            text = path.read_text(encoding="utf-8")
        return self.open_uri(path.as_uri(), text, language_id)

    def open_uri(self, uri: str, text: str, language_id: str = "python") -> str:
        """Open a buffer under any URI (untitled:, vscode-notebook-cell:...)."""
        self.versions[uri], self.texts[uri] = 1, text
        self.opened.add(uri)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, start: types.Position, end: types.Position, new_text: str) -> None:
        self.versions[uri] += 1
        self.texts[uri] = apply_text_edits(
            self.texts[uri], [types.TextEdit(types.Range(start, end), new_text)], self.encoding
        )
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(start, end), text=new_text)
                ],
            )
        )

    def replace_all(self, uri: str, new_text: str) -> None:
        lines = self.texts[uri].split("\n")
        self.change(
            uri,
            types.Position(0, 0),
            types.Position(len(lines) - 1, units(lines[-1], self.encoding)),
            new_text,
        )

    def close(self, uri: str) -> None:
        self.opened.discard(uri)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        )

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The diagnostics of the current text: pulled, or waited for until pushed for this version."""
        if self.pull:
            report = await asyncio.wait_for(
                self.client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
                ),
                TIMEOUT_S,
            )
            return list(report.items)
        return await self.pushed(uri, self.versions.get(uri))

    async def eventually(self, uri: str, predicate, timeout: float = TIMEOUT_S) -> list[types.Diagnostic]:
        """Diagnostics of ``uri`` once ``predicate`` holds for them (pulled again, or as pushed)."""

        async def poll() -> list[types.Diagnostic]:
            while True:
                diagnostics = (
                    await self.diagnostics(uri) if self.pull else self.published.get(uri, (None, None))[1]
                )
                if diagnostics is not None and predicate(diagnostics):
                    return diagnostics
                await asyncio.sleep(0.05)

        return await asyncio.wait_for(poll(), timeout)

    async def pushed(self, uri: str, version: int | None = None) -> list[types.Diagnostic]:
        async def arrived() -> list[types.Diagnostic]:
            while True:
                got = self.published.get(uri)
                if got is not None and (version is None or got[0] == version):
                    return got[1]
                self.publish_event.clear()
                await self.publish_event.wait()

        return await asyncio.wait_for(arrived(), TIMEOUT_S)

    async def code_lenses(self, uri: str, *commands: str) -> list[types.CodeLens]:
        """The server's code lenses of ``uri`` whose command is one of ``commands``."""
        result = await self.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
        )
        return [
            lens for lens in result or [] if lens.command is not None and lens.command.command in commands
        ]

    async def code_actions(
        self,
        uri: str,
        diagnostics: list[types.Diagnostic],
        only: list[str] | None = None,
        at: types.Position | None = None,
    ) -> list[types.CodeAction]:
        """The actions at ``at``, else where the first of ``diagnostics`` starts (else line 1)."""
        start = at or min(
            (d.range.start for d in diagnostics),
            key=lambda p: (p.line, p.character),
            default=types.Position(0, 0),
        )
        result = await asyncio.wait_for(
            self.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri),
                    range=types.Range(start, start),
                    context=types.CodeActionContext(diagnostics=diagnostics, only=only),
                )
            ),
            TIMEOUT_S,
        )
        return list(result or [])

    def edits_for(self, action: types.CodeAction, uri: str) -> list[types.TextEdit]:
        edit = action.edit
        if edit.document_changes:
            return [
                e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits
            ]
        return list((edit.changes or {}).get(uri, []))

    def apply(self, action: types.CodeAction, uri: str) -> str:
        """Apply the action's edit to the buffer as an editor does: one didChange per edit."""
        edits = self.edits_for(action, uri)
        assert edits, f"{action.title!r} has no edit for {uri}"
        for edit in in_application_order(edits):
            self.change(uri, edit.range.start, edit.range.end, edit.new_text)
        return self.texts[uri]


async def until(check, seconds: float = 60.0):
    """``check()``'s first true answer, asked every 0.1 s for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("timed out")


async def cancel_ends_its_child(
    session: Session, future: Any, msg_id: str, before: set[int], family: set[int]
):
    """Cancel the request ``msg_id`` (``future``) once its child runs (a process beside
    ``before`` and the server's ``family``): it fails as cancelled, and the child ends."""
    await until(grew(before, family, 1), 30)
    session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(future), 10)
    await until(shrank_to(before, family), 10)


def make_client(receiver: list[Session], configuration_delay: float = 0) -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)

    async def configuration(client: LanguageClient, params: types.ConfigurationParams) -> list:
        await asyncio.sleep(configuration_delay)  # a slow client: nothing may be published meanwhile
        return [
            client.get_configuration(section=item.section, scope_uri=item.scope_uri) for item in params.items
        ]

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        session = receiver[0]
        session.published[params.uri] = (params.version, list(params.diagnostics))
        session.history.append(params)
        session.publish_event.set()

    def register_capability(client: LanguageClient, params: types.RegistrationParams) -> None:
        client.registrations = getattr(client, "registrations", []) + list(params.registrations)

    def advice_changed(client: LanguageClient, params: Any) -> None:  # the advisor's own notification
        client.advice_changes = getattr(client, "advice_changes", []) + [params]

    def apply_edit(
        client: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        client.applied_edits = getattr(client, "applied_edits", []) + [params]  # kept for the test to apply
        return types.ApplyWorkspaceEditResult(applied=True)

    features = {
        **DEFAULT_CLIENT_FEATURES,
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
        types.CLIENT_REGISTER_CAPABILITY: register_capability,
        types.WORKSPACE_CONFIGURATION: configuration,
        "jax-lsp/adviceChanged": advice_changed,
        types.WORKSPACE_APPLY_EDIT: apply_edit,
    }
    register_lsp_features(client, features)
    return client


@contextlib.asynccontextmanager
async def start_session(
    profile: str,
    root: Path,
    *,
    initialization_options: Any = None,
    configuration: Any = None,
    process_id: int | None = None,
    configuration_delay: float = 0,
):
    make_caps, encoding, pull = PROFILES[profile]
    receiver: list[Session] = []
    client = make_client(receiver, configuration_delay)
    if configuration is not None:
        client.set_configuration(configuration, section="jax-lsp")
    session = Session(client, profile, encoding, pull, root, receiver=receiver)
    receiver.append(session)
    await client.start_io(*SERVER_COMMAND)
    try:
        await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=make_caps(),
                    process_id=process_id,
                    root_uri=root.as_uri(),
                    workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                    initialization_options=initialization_options,
                )
            ),
            TIMEOUT_S,
        )
        yield session
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    finally:
        # pygls' stop() waits for the server to exit: after a failure, make sure it does.
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


class BackgroundSession:
    """One server for many hypothesis examples: its client runs on a loop in a thread."""

    def __init__(self, profile: str, root: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._context = start_session(profile, root)
        self.session = self.run(self._context.__aenter__())

    def run(self, coroutine, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.run(self._context.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
