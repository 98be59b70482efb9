"""Where a project starts, and the folders its imports are found in.

One rule for `jax-lsp check`, `jax-lsp trace` and the language server: the project root is
the editor's workspace folder holding the file, else the nearest folder with a project marker,
else the folder above the outermost package. Imports are searched as jedi's smart sys path
does: the configured `src` folders, then each folder between the file and the root that is
not itself a package (the folder above `research/proj/pkg/` for `from pkg import ...`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
DEFAULT_SRC = (".", "src")


def project_root(start: Path, workspace_folders: Sequence[Path] = ()) -> Path:
    """The root of the project that holds `start` (a file or a folder)."""
    start = Path(start).absolute()
    holding = [folder for folder in workspace_folders if start.is_relative_to(folder)]
    if holding:
        return max(holding, key=lambda folder: len(folder.parts))
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return package_root(folder)


def package_root(path: Path) -> Path:
    """The folder above the outermost package holding `path` (its own folder if none)."""
    folder = path if path.is_dir() else path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def src_folders(roots: Iterable[Path], src: Sequence[str]) -> list[Path]:
    """The configured source folders (relative to each root), those that exist, deepest first."""
    found: list[Path] = []
    for root in roots:
        for entry in src or DEFAULT_SRC:
            folder = Path(os.path.normpath(root / entry))
            if folder not in found and folder.is_dir():
                found.append(folder)
    return sorted(found, key=lambda folder: -len(folder.parts))


def import_folders(path: Path, src: Sequence[Path], root: Path | None) -> list[Path]:
    """Where `import name` in the file at `path` is looked for, first match wins: the `src`
    folders, then every folder from the file's up to `root` that is not a package."""
    folders = list(src)
    folder = path.parent
    while True:
        if not (folder / "__init__.py").is_file() and folder not in folders:
            folders.append(folder)
        if (
            folder == root
            or folder.parent == folder
            or (root is not None and not folder.is_relative_to(root))
        ):
            break
        folder = folder.parent
    return folders


def import_root(path: Path, src: Sequence[Path]) -> Path:
    """The folder the module at `path` is imported from: its package root, or the deepest `src`
    folder holding it when that is deeper (a namespace package under `src = ["research"]`)."""
    best = package_root(path)
    for folder in src:
        if path.is_relative_to(folder) and len(folder.parts) > len(best.parts):
            best = folder
    return best
