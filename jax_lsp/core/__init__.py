"""The analysis core: Python source in, policy sites, definitions and return paths out.

It imports nothing else of jax_lsp (a test checks this): the rules build on it, and the engine
runs the rules over a workspace. It knows nothing of LSP and never imports JAX.
"""

from jax_lsp.core.config import Settings, SettingsError
from jax_lsp.core.findings import Edit, Finding, Fix, Position, Severity, Span
from jax_lsp.core.text.edits import OverlappingEdits, apply_edits

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
    "apply_edits",
]
