"""Files on disk for the CLI: which ones to check, and reading/writing them faithfully.

Writing keeps what the user chose: the encoding (a UTF-8 BOM, a PEP 263 coding cookie),
the line endings and the permissions; it replaces the file atomically.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from operator import attrgetter
from pathlib import Path

from jax_lsp.core.record import Record

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


def _relative_to(real: str, base: str) -> str | None:
    """``Path(real).relative_to(base).as_posix()`` for real paths; None when not under ``base``."""
    if real == base:
        return "."
    prefix = base.rstrip(os.sep) + os.sep
    return real[len(prefix) :].replace(os.sep, "/") if real.startswith(prefix) else None


def _is_excluded(name: str, real: str, base: str | None, patterns: tuple[str, ...]) -> bool:
    """A pattern matches the name, or the real path relative to ``base`` (where the patterns were set)."""
    from fnmatch import fnmatch  # here: only a project that sets `exclude` matches globs

    candidates = [name]
    relative = _relative_to(real, base) if base is not None else None
    if relative is not None:
        candidates.append(relative)
    return any(fnmatch(c, p.rstrip("/")) for p in patterns for c in candidates)


def _in_git_work_tree(real_folder: str) -> bool:
    """Whether git could find a work tree holding ``real_folder``: a ``.git`` (folder, or the file
    of a worktree or submodule) at or above it, or one named by GIT_DIR. Starting git to learn
    that a tree is none costs more than walking a small project."""
    if "GIT_DIR" in os.environ:
        return True
    folder = real_folder
    while not os.path.lexists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return True


def _git_ignored(folder: str) -> set[str]:
    """Absolute paths under ``folder`` that git ignores (.gitignore, info/exclude), like ruff.

    Empty outside a git work tree, without git, or when ``folder`` itself is ignored (a folder
    named on the command line is checked whatever git thinks of it)."""
    import subprocess  # here: only a tree in a git work tree asks git (start-up time)

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


_name = attrgetter("name")


def _entry_is(test: Callable[[], bool]) -> bool:
    """An `os.DirEntry` test (`entry.is_dir`, ...), False where the entry cannot be examined.
    `is_dir` follows a symlink, as os.walk sorts names into folders and files."""
    try:
        return test()
    except OSError:
        return False


class _Walk:
    """The files to check under one folder named on the command line, as paths relative to it,
    in the order of a top-down ``os.walk`` with sorted names (symlinked folders are not entered:
    they can loop, and usually point outside the project). Folders are skipped by name
    (SKIPPED_DIRS), when they are a virtualenv, when git ignores them or ``exclude`` matches."""

    def __init__(self, top: str, base: str | None, exclude: tuple[str, ...]) -> None:
        self.top = top
        self.real_top = os.path.realpath(top)
        self._absolute_top = os.path.abspath(top)
        self._base = base
        self._exclude = exclude
        self._ignored = _git_ignored(top) if _in_git_work_tree(self.real_top) else set()

    def real_path(self, relative: str, is_link: bool) -> str:
        """What ``Path.resolve()`` gives for a walked path: no folder walked into is a symlink."""
        if is_link:
            return os.path.realpath(os.path.join(self.top, relative))
        return os.path.join(self.real_top, relative)

    def files(self) -> list[tuple[str, bool]]:
        """Each file to check, as a path relative to the top, with whether it is a symlink."""
        found: list[tuple[str, bool]] = []
        self._collect("", found)
        return found

    def _collect(self, relative: str, found: list[tuple[str, bool]]) -> None:
        try:
            with os.scandir(os.path.join(self.top, relative)) as listing:
                entries = sorted(listing, key=_name)
        except OSError:
            return
        if relative and any(e.name == "pyvenv.cfg" and _entry_is(e.is_file) for e in entries):
            return  # a virtualenv, whatever its name
        folders = []
        for entry in entries:
            name = entry.name
            if _entry_is(entry.is_dir):
                if _entry_is(entry.is_symlink) or _skipped_dir(name):
                    continue
                if self._kept(entry, path := os.path.join(relative, name)):
                    folders.append(path)
            elif name.endswith(CHECKED_SUFFIXES) and self._kept(entry, path := os.path.join(relative, name)):
                found.append((path, _entry_is(entry.is_symlink)))
        for path in folders:
            self._collect(path, found)

    def _kept(self, entry: os.DirEntry[str], relative: str) -> bool:
        if self._ignored and os.path.join(self._absolute_top, relative) in self._ignored:
            return False
        if not self._exclude:
            return True
        real = self.real_path(relative, _entry_is(entry.is_symlink))
        return not _is_excluded(entry.name, real, self._base, self._exclude)


def _skipped_dir(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def discover(paths: Iterable[Path], exclude: tuple[str, ...] = (), base: Path | None = None) -> list[Path]:
    """Python files and notebooks under ``paths``, sorted and without duplicates.

    Folders are walked, skipping SKIPPED_DIRS, virtualenvs, what git ignores and ``exclude``
    globs (relative to ``base``, the folder of the pyproject.toml that set them). A file named explicitly is
    always checked. Raises MissingPathError for a path that does not exist.
    """
    return [Path(shown) for shown in discover_names(paths, exclude, base)]


def discover_names(
    paths: Iterable[Path], exclude: tuple[str, ...] = (), base: Path | None = None
) -> list[str]:
    """The files ``discover`` finds, as strings (a Path for each costs more than the walk)."""
    return [shown for shown, _ in _discovered(paths, exclude, base)]


def discover_resolved(
    paths: Iterable[Path], exclude: tuple[str, ...] = (), base: Path | None = None
) -> list[str]:
    """The files ``discover`` finds, in its order, each as ``str(Path.resolve())`` gives it."""
    return [real for _, real in _discovered(paths, exclude, base)]


def _discovered(paths: Iterable[Path], exclude: tuple[str, ...], base: Path | None) -> list[tuple[str, str]]:
    """Each file ``discover`` finds, as named or walked to and as its real path."""
    real_base = os.path.realpath(base) if base is not None else None
    found: dict[str, tuple[tuple[str, ...], str]] = {}  # real path: (Path(shown).parts, shown)
    for path in paths:
        if path.is_dir():
            walk = _Walk(os.fspath(path), real_base, exclude)
            for relative, is_link in walk.files():
                key = path.parts + tuple(relative.split(os.sep))
                found.setdefault(walk.real_path(relative, is_link), (key, os.path.join(walk.top, relative)))
        elif path.exists():
            found.setdefault(os.path.realpath(path), (path.parts, os.fspath(path)))
        else:
            raise MissingPathError(f"{path}: no such file or folder")
    # Sorted as the paths shown would be (pathlib compares their parts).
    return [(shown, real) for real, (_, shown) in sorted(found.items(), key=lambda item: item[1][0])]


class Source(Record):
    """A file's text with ``\\n`` line endings, and how to write it back as it was."""

    __slots__ = ("text", "encoding", "newline")
    text: str
    encoding: str  # "utf-8-sig" keeps a BOM
    newline: str

    def __init__(self, text: str, encoding: str, newline: str) -> None:
        self._assign(text, encoding, newline)


class UndecodableError(ValueError):
    pass


def decode(data: bytes) -> Source:
    """Decode as the core does (BOM, coding cookie). Raises UndecodableError when it cannot."""
    from jax_lsp.core.text import decoding  # here: only --fix decodes (start-up time)

    raw, encoding, problem = decoding.decode(data)
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
