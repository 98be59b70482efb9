"""Where a workspace's imports lead: the dotted name of each module, the folder it is imported
from, and the file that `import name` finds from a given file (the rules are engine.project's).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from jax_lsp.engine.project import import_folders, import_root, project_root, src_folders


class ImportResolver:
    """The import folders of the workspace's roots, and the files names were found at (cached by
    the name and the importing folder until `forget`)."""

    def __init__(self, roots: Sequence[Path], src: Sequence[str], is_open: Callable[[str], bool]) -> None:
        self._roots = list(roots)
        self._src_setting = src
        self._is_open = is_open  # an open buffer is a module even before it is saved
        self._src: list[Path] | None = None
        self._found: dict[tuple[str, str], str | None] = {}

    def forget(self) -> None:
        """A file appeared, changed or vanished: names may lead elsewhere now."""
        self._found.clear()

    def _src_folders(self) -> list[Path]:
        if self._src is None:
            self._src = src_folders(self._roots, self._src_setting)
        return self._src

    def root_of(self, path: Path) -> Path:
        """The project root of a file: the deepest root holding it, else what project_root finds
        (a file opened outside every workspace folder)."""
        return project_root(path, self._roots)

    def module_name(self, path: str) -> tuple[str, bool]:
        """(dotted name, whether it is a package) of the module at the absolute `path`."""
        file = Path(path)
        is_package = file.name == "__init__.py"
        parts = list(file.relative_to(import_root(file, self._src_folders())).with_suffix("").parts)
        if is_package:
            parts = parts[:-1]
        return ".".join(parts), is_package

    def import_root(self, path: Path | str) -> Path:
        """The folder the module at `path` is imported from (what a trace puts on sys.path)."""
        return import_root(Path(os.path.abspath(path)), self._src_folders())

    def folders(self, importer: str) -> list[Path]:
        """Where the imports of the file at `importer` are looked for, first match wins."""
        path = Path(importer)
        return import_folders(path, self._src_folders(), self.root_of(path))

    def find(self, name: str, importer: str) -> str | None:
        """The file `import name` finds from the file at `importer`, where Python would look."""
        key = (name, os.path.dirname(importer))
        if key not in self._found:
            self._found[key] = self._find_module_file(name, self.folders(importer))
        return self._found[key]

    def _find_module_file(self, name: str, folders: list[Path]) -> str | None:
        if not all(part.isidentifier() for part in name.split(".")):
            return None
        relative = Path(*name.split("."))
        for folder in folders:
            for candidate in (folder / relative.with_suffix(".py"), folder / relative / "__init__.py"):
                key = os.path.abspath(candidate)
                if self._is_open(key) or candidate.is_file():
                    return key
        return None
