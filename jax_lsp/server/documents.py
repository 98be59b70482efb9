"""Open editor buffers, split into lines the way LSP clients count them.

pygls splits with ``str.splitlines``, which also breaks at form feeds, ``\\x1c``-``\\x1e``,
``\\x85``, U+2028 and U+2029. LSP clients break only at ``\\n``, ``\\r\\n`` and ``\\r``, so
an incremental edit after such a character would land on the wrong line.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, unquote

from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument, Workspace

from jax_lsp.core.text.decoding import split_lines


class LspTextDocument(TextDocument):
    _cached_source: str | None = None
    _cached_lines: tuple[str, ...] = ()

    @property
    def lines(self) -> tuple[str, ...]:
        source = self.source
        if source is not self._cached_source:
            self._cached_lines = tuple(split_lines(source))
            self._cached_source = source
        return self._cached_lines


class LspWorkspace(Workspace):
    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None):
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def file_lines(path: Path | None) -> list[str]:
    """The lines of a file on disk (one no buffer holds); none if it cannot be read."""
    try:
        return split_lines(path.read_text(encoding="utf-8")) if path else []
    except (OSError, UnicodeDecodeError):
        return []


def uri_to_path(uri: str) -> Path | None:
    """The file behind a ``file:`` URI, or None for other schemes (untitled:, git:...)."""
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


# Buffers that are no file (untitled:, vscode-notebook-cell:...) are analysed under a key in a
# folder no disk has, so the analysis never reads, indexes or imports them as files. The key holds
# the whole URI, so the mapping is two-way without any state.
VIRTUAL_FOLDER = Path(os.path.abspath("/<jax-lsp: buffers that are not files>"))


def analysis_key(uri: str) -> Path | None:
    """The analysis' key for a buffer: its file, or a virtual key for a non-``file:`` URI."""
    if uri.startswith("file:"):
        return uri_to_path(uri)
    if ":" not in uri:
        return None
    # No dot but the suffix's: the analysis derives the module's dotted name from the file name.
    return VIRTUAL_FOLDER / f"{quote(uri, safe='').replace('.', '%2E')}.py"


def is_virtual(path: Path | str) -> bool:
    path = Path(path)
    return path.parent == VIRTUAL_FOLDER and path.suffix == ".py"


def path_to_uri(path: Path | str) -> str:
    """The URI of an analysis path: a file's ``file:`` URI, or the original URI of a virtual key."""
    if is_virtual(path):
        return unquote(Path(path).stem)
    return from_fs_path(str(path)) or Path(path).as_uri()


def is_python(uri: str, language_id: str | None = None) -> bool:
    return language_id == "python" or uri.endswith((".py", ".pyi"))


def close_in_analysis(analysis, path: Path) -> set[Path]:
    """Drop the buffer at ``path`` from the analysis; the files whose findings may change."""
    if is_virtual(path):
        # There is no file to go back to (nor to look for): an empty text drops its sites.
        analysis.set_document(path, "")
    else:
        # Back to the file on disk, which may hold other policy sites than the buffer did.
        analysis.close_document(path)
    return analysis.affected_files(path)
