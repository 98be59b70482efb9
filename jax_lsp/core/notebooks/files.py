"""Notebook files as the analysis meets them among the Python files: telling them apart, and
their bytes as a module's. The reader (``notebook``) is imported only when a notebook is met."""

from __future__ import annotations

import re

from jax_lsp.core.findings import Finding, Span
from jax_lsp.core.text.triggers import could_hold_site

# The parser too is imported where it is used: a re-run whose results all come from the cache
# reads no file.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.text.python_versions import ProjectPythons
    from jax_lsp.core.text.source import SourceModule

SUFFIX = ".ipynb"
# An output's image: base64 text in a JSON string, keyed by its MIME type.
_IMAGE_KEY = b'"image/'
_IMAGE_HEAD = rb'"image/[a-z+.-]+": *"'  # compiled at its first use (re keeps it)


def is_notebook(path: object) -> bool:
    return str(path).lower().endswith(SUFFIX)


def without_images(data: bytes) -> bytes:
    """A notebook's JSON with the images of its outputs emptied (`"image/png": ""`): most of its
    bytes and no code, and still JSON that reads as the same cells. An escaped quote in a cell's
    text never matches the pattern's unescaped ones."""
    pieces: list[bytes] = []
    kept = 0
    at = data.find(_IMAGE_KEY)
    while at >= 0:
        # The head is matched by a regular expression, the string's end found by a byte search:
        # a pattern that starts with a quote is tried at every quote of the JSON, and is slower.
        head = re.compile(_IMAGE_HEAD).match(data, at)
        end = data.find(b'"', head.end()) if head else -1
        if head is None or end <= head.end():  # not an image, or one emptied already
            at = data.find(_IMAGE_KEY, at + 1)
            continue
        pieces.append(data[kept : head.end()])
        kept = end
        at = data.find(_IMAGE_KEY, end + 1)
    return b"".join([*pieces, data[kept:]]) if pieces else data


def file_could_hold_site(path: str, data: bytes, policy_sites_only: bool = False) -> bool:
    """``could_hold_site`` for a file of either kind, from its bytes: a notebook's JSON is
    searched as it is (file_triggers reads its escaped line breaks), but for its images."""
    return could_hold_site(without_images(data) if is_notebook(path) else data, policy_sites_only)


def code_for_search(path: object, data: bytes) -> bytes:
    """A file's code as bytes to search: a notebook's code cells joined as written (IPython
    syntax left in; none if it is not a notebook's JSON). Its JSON alone is read: the notebook
    reader (``notebook``) keeps every position, for fixes, and costs many times more."""
    if not is_notebook(path):
        return data
    import json

    try:
        cells = json.loads(data)["cells"]
        sources = [cell["source"] for cell in cells if cell.get("cell_type") == "code"]
        text = "\n".join(source if isinstance(source, str) else "".join(source) for source in sources)
    except (ValueError, TypeError, KeyError, AttributeError):
        return b""
    return text.encode("utf-8", "surrogatepass")


def parse_notebook(
    data: bytes, path: str, only_if_site: bool = False, pythons: ProjectPythons | None = None
) -> SourceModule | None:
    """A notebook file as the module of its code cells; an unreadable one as an empty module
    with a JAX002 finding. None when ``only_if_site`` and the cells cannot hold a site."""
    from jax_lsp.core.codes import CODES, DECODE_ERROR
    from jax_lsp.core.notebooks.notebook import Notebook, NotebookError
    from jax_lsp.core.text.source import parse_text

    try:
        text = Notebook.read(data).layout.text
    except NotebookError as exc:
        module = parse_text("", path)
        span = Span.of(exc.line, exc.column, exc.line, exc.column)
        module.problems.append(Finding(path, DECODE_ERROR, CODES[DECODE_ERROR].severity, str(exc), span))
        return module
    if only_if_site and not could_hold_site(text.encode("utf-8", "surrogatepass")):
        return None
    return parse_text(text, path, pythons=pythons)
