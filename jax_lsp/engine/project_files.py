"""The files a workspace analyses: the open buffers over the files on disk, the Python files
under its roots, and the record of which files an analysis read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from jax_lsp.core.config import Settings
from jax_lsp.core.guard import WorkLock
from jax_lsp.core.packages import read_always, read_file, read_once_under
from jax_lsp.engine.files import discover_names


def path_key(path: Path | str) -> str:
    """How the workspace names a file: its absolute, normalized path."""
    return os.path.abspath(os.fspath(path))


class ProjectFiles:
    """The open buffers (each wins over its file on disk), the files under the roots, and the
    recorders of what an analysis depends on. Shares the workspace's lock: the methods that
    change a buffer are called with it held, by the workspace, with what else that changes."""

    def __init__(self, roots: list[Path], settings: Settings, lock: WorkLock):
        self.roots = roots
        self._settings = settings
        self._lock = lock
        self._texts: dict[str, str] = {}  # the open buffers, by path
        self.is_open = self._texts.__contains__  # whether a buffer is open at a path (a key)
        self._load_recorders: list[set[str]] = []
        self._unchanging = False  # inside unchanging(), or a batch's worker
        self._files_unchanged: list[str] | None = None  # python_files(), once asked while unchanging

    def open(self, key: str, text: str) -> None:
        self._texts[key] = text

    def close(self, key: str) -> None:
        self._texts.pop(key, None)

    def text(self, key: str) -> str | None:
        """The open buffer's text at a key (with the lock held)."""
        return self._texts.get(key)

    def buffers(self) -> dict[str, str]:
        """The open buffers' texts, by path."""
        with self._lock:
            return dict(self._texts)

    def buffer(self, path: Path | str) -> str | None:
        """The open buffer's text at `path`, or None if none is open there."""
        with self._lock:
            return self._texts.get(path_key(path))

    def read(self, path: Path | str) -> bytes | None:
        """A module's current content: its open buffer (as UTF-8), else the file on disk."""
        key = path_key(path)
        with self._lock:
            if key in self._texts:
                return self._texts[key].encode("utf-8", "surrogatepass")
        return read_file(key)

    def stamp(self, key: str) -> object:
        """What changes when the file at a key does: its buffer, else its time and size."""
        if key in self._texts:
            return ("overlay", id(self._texts[key]))
        try:
            stat = os.stat(key)
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def python_files(self) -> list[str]:
        """Every Python file under the roots, and the open buffers outside them."""
        with self._lock:
            if self._files_unchanged is not None:
                return list(self._files_unchanged)
            # Each under a root, which is absolute and normalized: already as path_key gives it.
            found = discover_names(self.roots, self._settings.exclude) if self.roots else []
            found += sorted(set(self._texts) - set(found))
            if self._unchanging:
                self._files_unchanged = list(found)
            return found

    @contextlib.contextmanager
    def unchanging(self) -> Iterator[None]:
        """A block in which no file under the roots changes (a batch run): the files are found
        once, when first asked for (a check that needs no list of them walks no folder), and each
        is read once. Not for the server, whose files change."""
        self.assume_unchanging()
        try:
            yield
        finally:
            self._unchanging, self._files_unchanged = False, None
            read_always()

    def assume_unchanging(self) -> None:
        """`unchanging` for the rest of this process (a batch's worker)."""
        self._unchanging, self._files_unchanged = True, None
        read_once_under(map(str, self.roots))

    # What an analysis read ---------------------------------------------------------
    def read_by_analysis(self, path: str) -> None:
        for recorder in self._load_recorders:
            recorder.add(path)

    @contextlib.contextmanager
    def recording_loads(self) -> Iterator[set[str]]:
        """The paths of the modules loaded inside the block, and of the files that declare which
        Python the project requires where one was looked for: what an analysis depended on."""
        loaded: set[str] = set()
        with self._lock:
            self._load_recorders.append(loaded)
        try:
            yield loaded
        finally:
            with self._lock:
                self._load_recorders.remove(loaded)

    def note_reads(self, paths: Iterable[str]) -> None:
        """An analysis depends on these files too, though it did not load them as modules."""
        with self._lock:
            for recorder in self._load_recorders:
                recorder.update(paths)

    def depends_on_every_file(self) -> None:
        """`note_reads` of every file of the project, for an answer that any file may change (the
        tags, the new-remat switch); only where an analysis is recorded: the server keeps no
        record, and would list the project for nothing."""
        with self._lock:
            if self._load_recorders:
                self.note_reads(self.python_files())
