"""Files on disk for the CLI: which ones to check, and reading/writing them faithfully.

Writing keeps what the user chose: the encoding (a UTF-8 BOM, a PEP 263 coding cookie),
the line endings and the permissions; it replaces the file atomically.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

# Where `jax-lsp check` keeps its results between runs (result_cache), in the project root.
CACHE_DIR_NAME = ".jax-lsp-cache"
# Folders that never hold the user's own code (ruff's list, give or take).
SKIPPED_DIRS = frozenset(
    {
        ".bzr",
        ".direnv",
        ".eggs",
        ".git",
        ".git-rewrite",
        ".hg",
        ".ipynb_checkpoints",
        CACHE_DIR_NAME,
        ".mypy_cache",
        ".nox",
        ".pants.d",
        ".pytest_cache",
        ".pytype",
        ".ruff_cache",
        ".svn",
        ".tox",
        ".venv",
        "__pycache__",
        "__pypackages__",
        "_build",
        "buck-out",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
        ".virtual_documents",  # jupyterlab-lsp's copies of open notebooks, as Python text
    }
)


# Python files and Jupyter notebooks (checked as the module of their code cells).
CHECKED_SUFFIXES = (".py", ".ipynb")


class MissingPathError(FileNotFoundError):
    pass


def _is_excluded(path: Path, base: Path | None, patterns: Iterable[str]) -> bool:
    """A pattern matches the name, or the path relative to ``base`` (where the patterns were set)."""
    if not patterns:
        return False
    candidates = [path.name]
    if base is not None:
        try:
            candidates.append(path.resolve().relative_to(base).as_posix())
        except ValueError:
            pass
    return any(fnmatch(c, p.rstrip("/")) for p in patterns for c in candidates)


def _skipped_dir(path: Path, base: Path | None, exclude: tuple[str, ...]) -> bool:
    return (
        path.name in SKIPPED_DIRS
        or path.name.endswith(".egg-info")
        or (path / "pyvenv.cfg").is_file()  # any virtualenv, whatever its name
        or _is_excluded(path, base, exclude)
    )


def _git_ignored(folder: Path) -> set[str]:
    """Absolute paths under ``folder`` that git ignores (.gitignore, info/exclude), like ruff.

    Empty outside a git work tree, without git, or when ``folder`` itself is ignored (a folder
    named on the command line is checked whatever git thinks of it)."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"],
            cwd=folder,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if done.returncode != 0:
        return set()
    base = os.path.abspath(folder)
    return {os.path.join(base, os.fsdecode(p)).rstrip("/") for p in done.stdout.split(b"\0") if p}


def _walk(folder: Path, base: Path | None, exclude: tuple[str, ...]) -> Iterator[Path]:
    ignored = _git_ignored(folder)
    # Symlinked folders are not followed: they can loop, and usually point outside the project.
    for dirpath, dirnames, filenames in os.walk(folder, onerror=None, followlinks=False):
        here = Path(dirpath)
        absolute = os.path.abspath(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if os.path.join(absolute, d) not in ignored and not _skipped_dir(here / d, base, exclude)
        )
        for name in sorted(filenames):
            if name.endswith(CHECKED_SUFFIXES) and os.path.join(absolute, name) not in ignored:
                file = here / name
                if not _is_excluded(file, base, exclude):
                    yield file


def discover(paths: Iterable[Path], exclude: tuple[str, ...] = (), base: Path | None = None) -> list[Path]:
    """Python files and notebooks under ``paths``, sorted and without duplicates.

    Folders are walked, skipping SKIPPED_DIRS, virtualenvs, what git ignores and ``exclude``
    globs (relative to ``base``, the folder of the pyproject.toml that set them). A file named explicitly is
    always checked. Raises MissingPathError for a path that does not exist.
    """
    return [file for file, _ in _discovered(paths, exclude, base)]


def discover_resolved(
    paths: Iterable[Path], exclude: tuple[str, ...] = (), base: Path | None = None
) -> list[Path]:
    """The files ``discover`` finds, in its order, each as ``Path.resolve()`` gives it."""
    return [
        file.resolve() if real is None else Path(real) for file, real in _discovered(paths, exclude, base)
    ]


def _discovered(
    paths: Iterable[Path], exclude: tuple[str, ...], base: Path | None
) -> list[tuple[Path, str | None]]:
    """Each file ``discover`` finds, with its real path when it is no symlink."""
    base = base.resolve() if base is not None else None
    found: dict[str, tuple[Path, str | None]] = {}
    real_path = _RealPaths()
    for path in paths:
        if path.is_dir():
            files: Iterable[Path] = _walk(path, base, exclude)
        elif path.exists():
            files = [path]
        else:
            raise MissingPathError(f"{path}: no such file or folder")
        for file in files:
            real = real_path(file)
            found.setdefault(os.path.realpath(file) if real is None else real, (file, real))
    return sorted(found.values(), key=lambda found_file: found_file[0])


class _RealPaths:
    """``os.path.realpath`` of many files that are no symlinks, each folder resolved once
    (realpath reads every component of the path again: ten system calls a file in a deep tree)."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}

    def __call__(self, file: Path) -> str | None:
        """The file's real path; None for a symlink (or a path through ``..``), left to realpath."""
        name = os.fspath(file)
        if ".." in file.parts or os.path.islink(name):  # abspath would fold `link/..` wrongly
            return None
        folder, base = os.path.split(os.path.abspath(name))
        if folder not in self._folders:
            self._folders[folder] = os.path.realpath(folder)
        return os.path.join(self._folders[folder], base)


@dataclass(frozen=True)
class Source:
    """A file's text with ``\\n`` line endings, and how to write it back as it was."""

    text: str
    encoding: str  # "utf-8-sig" keeps a BOM
    newline: str


class UndecodableError(ValueError):
    pass


def decode(data: bytes) -> Source:
    """Decode as the core does (BOM, coding cookie). Raises UndecodableError when it cannot."""
    from jax_lsp.core import source  # here: only --fix decodes (start-up time)

    raw, encoding, problem = source.decode(data)
    if problem:
        raise UndecodableError(problem)
    newline = "\n"
    first = raw.find("\n")
    if first > 0 and raw[first - 1] == "\r":
        newline = "\r\n"
    elif first < 0 and "\r" in raw:
        newline = "\r"
    return Source(raw.replace("\r\n", "\n").replace("\r", "\n"), encoding, newline)


def encode(original: Source, text: str) -> bytes:
    """``text`` (``\\n`` endings) in the file's encoding and line endings. Raises UnicodeEncodeError."""
    if original.newline != "\n":
        text = text.replace("\n", original.newline)
    return text.encode(original.encoding)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: readers see the old file or the new one, never half of it."""
    import tempfile  # here: only --fix writes (start-up time)

    target = path.resolve()  # write through a symlink, not over it
    mode = stat.S_IMODE(target.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".jax-lsp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
