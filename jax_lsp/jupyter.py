"""jax-lsp for JupyterLab: the spec that jupyter-lsp (the server side of jupyterlab-lsp) finds.

jupyter-lsp looks up the entry point group ``jupyter_lsp_spec_v1`` (pyproject.toml registers
``spec`` below), so installing jax-lsp next to jupyterlab-lsp starts it for Python notebooks
and files with no configuration.
"""

from __future__ import annotations

import sys
from typing import Any

from jax_lsp import __version__

NAME = "jax-lsp"


def spec(manager: Any = None) -> dict[str, dict[str, Any]]:
    """jupyter-lsp's spec finder: ``{name: spec}`` (schema version 2)."""
    return {
        NAME: {
            "display_name": f"jax-lsp {__version__}",
            # The Python that runs Jupyter found this entry point, so it has jax-lsp installed.
            "argv": [sys.executable, "-m", "jax_lsp", "serve"],
            "languages": ["python"],
            "mime_types": ["text/python", "text/x-ipython"],
            "version": 2,
            # The server reads the documents it is sent: no copies in .virtual_documents, and the
            # notebook's own path, so its imports resolve from its folder.
            "requires_documents_on_disk": False,
            "urls": {"home": "https://github.com/jax-lsp/jax-lsp"},
            "install": {"pip": "pip install jax-lsp"},
        }
    }
