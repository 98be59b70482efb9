"""Which files could use the policies of a few named modules, found by reading import
statements as text: pre-commit names only the changed files, and their findings may come from
sites in files it does not name. No file is parsed here.

A file can import a module only by writing its name (`from pkg import policies`, `from
.policies import p`), or, inside a package, by a relative import of the package itself (`from .
import p`): a plain search for those words skips most files before any import is read, and a
notebook's cells are read out of its JSON only when it passes. A file that imports them is a
user only if a statement its policy sites can read writes what it imports (core.text.site_reads):
most files that import a module use it for something else. So a user writes the name of a
named module, or one of the few names a package re-exports of them: a second word search,
which on a tree where the packages have common names (`jax`, `numpy`) leaves out most files
before their imports are read.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from jax_lsp.core.notebooks.files import code_for_search, file_could_hold_site, is_notebook, without_images
from jax_lsp.core.packages import at_line_starts, read_file
from jax_lsp.core.record import Record
from jax_lsp.core.text.site_reads import sites_could_read

# `from SOURCE import NAMES`, NAMES in parentheses over several lines or continued with `\`;
# `import NAMES`. Each at the start of a line, after its indentation (at_line_starts).
_FROM_IMPORT = re.compile(rb"from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*(?:\\\n[^\n]*)*)")
_IMPORT = re.compile(rb"import[ \t]+([^\n]*)")
_COMMENT = re.compile(rb"#[^\n]*")


class Exported(Record):
    """A module whose names a user could import: its dotted name, its file, the names it binds."""

    __slots__ = ("name", "path", "names")
    name: str
    path: Path
    names: frozenset[str]

    def __init__(self, name: str, path: Path, names: frozenset[str]) -> None:
        self._assign(name, path, names)

    def words(self) -> set[bytes]:
        """What an import of this module must write: its last name, as a module or a folder."""
        folder_or_file = self.path.parent.name if self.path.name == "__init__.py" else self.path.stem
        return {
            word.encode("utf-8", "surrogatepass")
            for word in (self.name.rsplit(".", 1)[-1], folder_or_file)
            if word
        }

    def package_folder(self) -> Path | None:
        """The folder whose modules may import this package by a relative import alone."""
        return self.path.parent if self.path.name == "__init__.py" else None


@functools.lru_cache(maxsize=4096)
def _relative_files(source: str, level: int, folder: str) -> tuple[str, str]:
    """The two files a relative import `source` in a module of `folder` may name (as strings:
    pathlib costs more than the rest of the search)."""
    for _ in range(level - 1):
        folder = os.path.dirname(folder)
    module = os.path.join(folder, *(part for part in source[level:].split(".") if part))
    return module + ".py", os.path.join(module, "__init__.py")


def _is_module(source: str, folder: str, target: Exported) -> bool:
    """Whether `source`, as written after `from`/`import` in a module of `folder`, names `target`."""
    level = len(source) - len(source.lstrip("."))
    if level:
        return str(target.path) in _relative_files(source, level, folder)
    name = target.name
    return bool(source) and (source == name or name.endswith("." + source) or source.endswith("." + name))


def _submodule(source: str, name: str) -> str:
    return f"{source}{name}" if source.endswith(".") else f"{source}.{name}"


class Imported(Record):
    """What a file imports from the targets: the names they bind (as imported and as bound
    there; a star import's are those the target binds), and each name the file gives a target
    module imported whole (`from pkg import policies`, `import pkg.policies as P`) with the
    names that module binds."""

    __slots__ = ("names", "modules")
    names: set[str]
    modules: dict[str, set[str]]

    def __init__(self, names: set[str] | None = None, modules: dict[str, set[str]] | None = None) -> None:
        self._assign(set() if names is None else names, {} if modules is None else modules)

    def __bool__(self) -> bool:
        return bool(self.names or self.modules)


def _items(names: bytes) -> list[tuple[str, str]]:
    """The (name, bound as) of each item of an import list: `(a as b, c)` -> (a, b), (c, c)."""
    items = []
    for part in _COMMENT.sub(b"", names).replace(b"\\", b" ").strip(b"() \t\r\n").split(b","):
        words = part.split()
        if words:
            decoded = [word.decode("utf-8", "replace") for word in words]
            items.append((decoded[0], decoded[2] if len(decoded) == 3 and decoded[1] == "as" else decoded[0]))
    return items


class _NamedModules:
    """The targets an import may name, and which of them each module it writes names (the same
    few modules are imported by most files: asked once each)."""

    def __init__(self, targets: list[Exported]) -> None:
        self.targets = targets
        # An import names a target by a relative import, or by writing the target's last name.
        self.lasts = {t.name.rsplit(".", 1)[-1].encode("utf-8", "surrogatepass") for t in targets}
        self._by_last: dict[str, list[Exported]] = {}
        for target in targets:
            self._by_last.setdefault(target.name.rsplit(".", 1)[-1], []).append(target)
        self._named: dict[tuple[str, str], list[Exported]] = {}

    def named_by(self, source: str, folder: str) -> list[Exported]:
        """The targets `source`, as written after `from`/`import` in a module of `folder`, names."""
        key = (source, folder if source.startswith(".") else "")  # an absolute name names the same anywhere
        if key not in self._named:
            self._named[key] = [t for t in self.targets if _is_module(source, folder, t)]
        return self._named[key]

    def by_last(self, name: str) -> list[Exported]:
        """The targets whose last name is `name`."""
        return self._by_last.get(name, [])


def imports_from(data: bytes, importer: Path, targets: _NamedModules) -> Imported:
    """What the file at `importer` imports from `targets`."""
    found = Imported()
    folder = os.path.dirname(importer)
    for match in at_line_starts(_FROM_IMPORT, data):
        if not match.group(1).startswith(b".") and not any(last in match.group(0) for last in targets.lasts):
            continue
        source, items = match.group(1).decode("utf-8", "replace"), _items(match.group(2))
        imported = {name for item in items for name in item}
        named = targets.named_by(source, folder)
        for target in named:
            found.names.update(target.names if "*" in imported else imported & target.names)
            found.names.update(bound for name, bound in items if name in target.names)
        for last in imported:  # `from pkg import policies`: a target module imported whole
            for target in targets.by_last(last):
                if target not in named and target in targets.named_by(_submodule(source, last), folder):
                    for name, bound in items:
                        if name == last:
                            found.modules.setdefault(bound, set()).update(target.names)
    for match in at_line_starts(_IMPORT, data):
        if not any(last in match.group(1) for last in targets.lasts):
            continue
        for name, bound in _items(match.group(1)):
            used_as = bound if bound != name else name.rsplit(".", 1)[-1]  # `a.b.c` is used as `a.b.c.x`
            for target in targets.named_by(name, folder):
                found.modules.setdefault(used_as, set()).update(target.names)
    return found


class _WordSearch:
    """The files that write one of `words`, or lie under one of `folders`."""

    def __init__(self, words: set[bytes], folders: Iterable[Path | None]):
        self.words = words
        # As strings: Path.is_relative_to costs more than reading the file's words.
        self.folders = tuple(f"{folder}{os.sep}" for folder in folders if folder is not None)
        # A notebook's JSON may write a non-ASCII name escaped: only ASCII words are searched there.
        self.notebook_words = self.words if all(w.isascii() for w in self.words) else None

    def passes(self, path: Path, data: bytes) -> bool:
        words = self.notebook_words if is_notebook(path) else self.words
        return words is None or any(word in data for word in words) or str(path).startswith(self.folders)


def _import_search(targets: list[Exported]) -> _WordSearch:
    """The files that could import one of `targets`: they write its name, or lie in its package's
    folder (`from . import p` names the package by its place)."""
    return _WordSearch(set().union(*(t.words() for t in targets)), [t.package_folder() for t in targets])


# Up to this many names re-exported, a search of each name pays: past it, the names a user
# must write are left to the closure (core.text.site_reads).
_FEW_REEXPORTED = 8


def _use_search(named: list[Exported], reexporting: list[Exported]) -> _WordSearch | None:
    """The files that could read what they import of the targets, by the words they write: the
    name of a named module (or a place in its package's folder), or one of the names a
    package binds of them (`from pkg import chosen`, `pkg.chosen`, `chosen` after `from pkg
    import *`). What a file imports of a package is read only where it writes one of those
    names (sites_could_read), and packages that re-export a named module use common names
    (`jax`, `numpy`): `_import_search` lets most files through. None where no package
    re-exports them (the import search is this search then), or past a few names."""
    names = set().union(*(t.names for t in reexporting))
    if not reexporting or len(names) > _FEW_REEXPORTED:
        return None
    words = set().union(*(t.words() for t in named))
    return _WordSearch(
        words | {name.encode("utf-8", "surrogatepass") for name in names}, [t.package_folder() for t in named]
    )


# How many names of files that could hold a site `site_candidates` gives at once.
BATCH_FILES = 8


def is_package(path: str) -> bool:
    return os.path.basename(path) == "__init__.py"


def read_for_search(path: str) -> bytes | None:
    """A file's bytes as the search reads them: a notebook's without its images."""
    data = read_file(path)
    return without_images(data) if data is not None and is_notebook(path) else data


def site_candidates(paths: list[str]) -> Iterator[list[str]]:
    """The files of `paths` but packages (`UserSearch` reads those first) that could hold a
    policy site, a few names at a time: names, not bytes, for a forked process to send as it
    reads (a pipe of names never fills, so it never waits for its reader); `UserSearch` tells
    each of them (`is_user_if_site`), read again from the page cache."""
    batch: list[str] = []
    for path in paths:
        if is_package(path) or (data := read_for_search(path)) is None:
            continue
        if file_could_hold_site(path, data, policy_sites_only=True):
            batch.append(path)
            if len(batch) == BATCH_FILES:
                yield batch
                batch = []
    if batch:
        yield batch


class UserSearch:
    """Which files could hold a site and import something of the `named` modules, directly or
    through a package that re-exports it (`from pkg.policies import p as chosen` in
    pkg/__init__.py). Made from every package's bytes; then told each file's bytes as on disk
    (a notebook's JSON, its images left out or not: `read_for_search`)."""

    def __init__(
        self, packages: dict[Path, bytes], named: list[Exported], module_name: Callable[[Path], str]
    ) -> None:
        targets = list(named)
        added = list(named)
        while added:  # a package that imports nothing of the targets so far is asked of the new ones
            search, newest = _import_search(added), _NamedModules(added)
            known = {t.path for t in targets}
            added = [
                Exported(module_name(path), path, frozenset(names))
                for path, data in packages.items()
                if path not in known
                and search.passes(path, data)
                and (imported := imports_from(data, path, newest))
                for names in [imported.names | set(imported.modules)]
            ]
            targets += added
        self._targets = _NamedModules(targets)
        self._search = _import_search(targets)
        self._uses = _use_search(named, targets[len(named) :])

    def is_user(self, path: Path, data: bytes) -> bool:
        # The site test first: it lets fewer files through than the words of the targets.
        return file_could_hold_site(str(path), data, policy_sites_only=True) and self.is_user_if_site(
            path, data
        )

    def is_user_if_site(self, path: Path, data: bytes) -> bool:
        """`is_user` for a file known to pass the site test (`site_candidates` gave it)."""
        return self.writes_words(path, data) and self.reads_targets(path, data)

    def writes_words(self, path: Path, data: bytes) -> bool:
        """Whether the file writes the words a user writes: a byte search, before any import is read."""
        return (self._uses is None or self._uses.passes(path, data)) and self._search.passes(path, data)

    def reads_targets(self, path: Path, data: bytes) -> bool:
        """Whether a file that `writes_words` imports something of the targets that a statement
        its sites can read writes."""
        code = code_for_search(path, data)
        imported = imports_from(code, path, self._targets)
        return bool(imported) and sites_could_read(code, imported.names, imported.modules)
