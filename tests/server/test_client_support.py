"""The client's capabilities, read once at initialize into a record."""

from lsprotocol import types
from pytest_lsp import client_capabilities

from jax_lsp.server.client_support import ClientSupport
from tests.server.lsp_harness import vscode_capabilities


def test_each_editor_profile_reads_as_what_it_can_do():
    vscode = ClientSupport.read(vscode_capabilities())
    neovim = ClientSupport.read(client_capabilities("neovim@v0.11.0"))
    emacs = ClientSupport.read(client_capabilities("emacs@v29.1"))
    assert (vscode.pull_diagnostics, neovim.pull_diagnostics, emacs.pull_diagnostics) == (True, False, False)
    assert (vscode.document_changes, neovim.document_changes, emacs.document_changes) == (True, False, True)
    assert vscode.work_done_progress and vscode.configuration and vscode.code_lens_refresh
    assert ClientSupport.read(types.ClientCapabilities()) == ClientSupport()


def test_pull_needs_both_the_request_and_the_refresh():
    caps = client_capabilities("neovim@v0.11.0")
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities()
    assert not ClientSupport.read(caps).pull_diagnostics
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    assert ClientSupport.read(caps).pull_diagnostics
