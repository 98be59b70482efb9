"""The installed packages a workspace imports, and their source files (a model library may tag
the checkpoint names its users save)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from jax_lsp.core.logger import logger

log = logger(__name__)

# Searched for without `^[ \t]*` (a literal first is found much faster), which at_line_starts
# checks after. Compiled at their first use (re keeps them): a check of a file without tags
# reads no imports.
_FROM = rb"from[ \t]+([A-Za-z_]\w*)"
_IMPORT = rb"import[ \t]+([^\r\n#;]+)"
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)


def at_line_starts(pattern: re.Pattern[bytes], data: bytes) -> Iterator[re.Match[bytes]]:
    """The matches `^[ \t]*` + `pattern` would find with re.M, many times faster: the regular
    expression starts with a word, which is searched for, and what precedes it is checked."""
    position = 0
    while (match := pattern.search(data, position)) is not None:
        if data[data.rfind(b"\n", 0, match.start()) + 1 : match.start()].strip(b" \t"):
            position = match.start() + 1  # not at the start of its line
        else:
            yield match
            position = match.end()


def imported_packages(data: bytes) -> set[str]:
    """The top-level names a file imports (`import a.b as c, d` -> {"a", "d"}), stdlib left out."""
    names = {m.group(1).decode() for m in at_line_starts(re.compile(_FROM), data)}
    for clause in (m.group(1) for m in at_line_starts(re.compile(_IMPORT), data)):
        for part in clause.split(b","):
            words = part.split()
            if words and re.fullmatch(rb"[A-Za-z_][\w.]*", words[0]):
                names.add(words[0].split(b".")[0].decode())
    return names - _STDLIB


def search_path(interpreter: str | None) -> tuple[Path, ...]:
    """Where `interpreter` (None: this Python) imports from; empty when it cannot be asked."""
    entries = sys.path if interpreter is None else _interpreter_path(interpreter)
    return tuple(Path(entry) for entry in entries if entry and os.path.isdir(entry))


@lru_cache(maxsize=8)
def _interpreter_path(interpreter: str) -> tuple[str, ...]:
    try:
        import jedi

        return tuple(jedi.create_environment(interpreter, safe=False).get_sys_path())
    except Exception as exc:  # jedi is best effort: no packages is "no tags from them"
        log.info("cannot read the search path of %s: %s", interpreter, exc)
        return ()


def package_files(name: str, path: Iterable[Path], skip: Iterable[Path] = ()) -> list[str]:
    """The .py files of the installed package or module `name`, first found on `path`;
    nothing for one under a `skip` folder (the workspace's own)."""
    skip = tuple(skip)
    for folder in path:
        if any(folder.is_relative_to(s) for s in skip):
            continue
        module = folder / f"{name}.py"
        if module.is_file():
            return [str(module)]
        package = folder / name
        if package.is_dir() and name.isidentifier():
            found: list[str] = []
            _add_python_files(str(package), found)
            return found
    return []


def _add_python_files(folder: str, found: list[str]) -> None:
    """The .py files under `folder`, as os.walk lists them (a folder's files, then each of its
    folders in turn, by name; linked folders not entered; __pycache__ left out), without the
    cost of os.walk on the thousands of files of a large package."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    folders = []
    for entry in entries:
        try:
            is_folder = entry.is_dir()
        except OSError:
            is_folder = False
        if not is_folder:
            if entry.name.endswith(".py"):
                found.append(entry.path)
        elif entry.name != "__pycache__" and not entry.is_symlink():
            folders.append(entry.path)
    for path in folders:
        _add_python_files(path, found)


# While files do not change (a batch run), each under these folders is read once: the project's
# files are searched by several analyses (tags, JAX's reach, the new-remat switch) and checked.
_READ_ONCE_UNDER: tuple[str, ...] = ()
_read_once: dict[str, bytes | None] = {}


def read_file(path: str) -> bytes | None:
    """A file's bytes; None when it cannot be read (by the system's calls, without the cost of
    pathlib or of a file object: about a third less than `open(path, "rb").read()`)."""
    if _READ_ONCE_UNDER and path in _read_once:
        return _read_once[path]
    data: bytes | None
    try:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(descriptor).st_size
            chunks: list[bytes] = []  # one, unless the file grew since its size was read
            while chunk := os.read(descriptor, size + 1 if not chunks else 1 << 20):
                chunks.append(chunk)
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            os.close(descriptor)
    except OSError:
        data = None
    if _READ_ONCE_UNDER and path.startswith(_READ_ONCE_UNDER):
        _read_once[path] = data
    return data


def read_once_under(folders: Iterable[str]) -> None:
    """From now on, read each file under `folders` once (until `read_always`)."""
    global _READ_ONCE_UNDER
    _READ_ONCE_UNDER = tuple(os.path.join(os.path.abspath(folder), "") for folder in folders)


def read_always() -> None:
    global _READ_ONCE_UNDER
    _READ_ONCE_UNDER = ()
    _read_once.clear()
