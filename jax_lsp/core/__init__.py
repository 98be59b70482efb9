"""The analysis core: source text in, findings with fixes out. Knows nothing of LSP or JAX at runtime."""

from jax_lsp.core.config import Settings, SettingsError
from jax_lsp.core.edits import OverlappingEdits, apply_edits
from jax_lsp.core.model import Edit, Finding, Fix, Position, Severity, Span
from jax_lsp.core.workspace import Workspace

__all__ = [
    "Edit",
    "Finding",
    "Fix",
    "OverlappingEdits",
    "Position",
    "Settings",
    "SettingsError",
    "Severity",
    "Span",
    "Workspace",
    "analyze_text",
    "apply_edits",
]


def analyze_text(text: str, path: str = "<stdin>", settings: Settings | None = None) -> list[Finding]:
    """Findings for one file's text; imports are followed on disk beside `path`."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    workspace = Workspace([folder], settings)
    workspace.set_document(path, text)
    return workspace.check_file(path)
