"""The engine: runs the rules over a workspace of files and open buffers.

It owns what the command line and the language server share: project discovery
(`project.project_root`), file discovery, noqa/select/ignore and severities, the result cache,
the process pool of large checks, the forked reader of a check of named files, and the fix
loop.
"""

from __future__ import annotations

import os
from pathlib import Path

from jax_lsp.core import Finding, Settings
from jax_lsp.engine.workspace import Workspace

__all__ = ["Workspace", "analyze_text"]


def analyze_text(text: str, path: str = "<stdin>", settings: Settings | None = None) -> list[Finding]:
    """Findings for one file's text; imports are followed on disk beside `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    workspace = Workspace([Path(folder)], settings)
    workspace.set_document(path, text)
    return workspace.check_file(path)
