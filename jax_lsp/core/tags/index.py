"""Every checkpoint name in reach: the `checkpoint_name` tags of the workspace and of the
installed packages it imports, and the names the workspace gives to policy factories.

Built on first use, from a byte search of every file (only the files that mention a tag, a
factory of names or a followed word are parsed, and only as far as their tags and the words
followed need), and kept current file by file.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from jax_lsp.core.findings import InternalError, Position, Span
from jax_lsp.core.guard import guarded
from jax_lsp.core.logger import logger
from jax_lsp.core.packages import imported_packages, package_files, read_file, search_path
from jax_lsp.core.record import Record
from jax_lsp.core.tags.flow import MAX_FILES, FileFacts, NameFlow, shapes_of, written_tag
from jax_lsp.core.tags.tags import (
    TAG_FUNCTION,
    NameUse,
    Place,
    Tag,
    callee_names,
    may_name_checkpoint_names,
    mentions_tag,
    name_uses,
    quoted,
    tag_calls,
)
from jax_lsp.core.text.words import has_word

# typing and dataclasses cost a check ~12 ms to import: the names below are for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol, TypeVar

    from jax_lsp.core.binding.module import Module

    T = TypeVar("T")

    class NameSources(Protocol):
        """What the index reads through: the workspace's files, open buffers and modules."""

        roots: list[Path]
        interpreter: str | None
        internal_errors: list[InternalError]

        def read(self, path: Path | str) -> bytes | None: ...

        def buffers(self) -> dict[str, str]: ...

        def load(
            self, path: Path | str, only_if_site: bool = False, partially: bool = False
        ) -> Module | None: ...

        def release(self, path: Path | str) -> None: ...

        def in_roots(self, path: Path | str) -> bool: ...

        def python_files(self) -> list[str]: ...

        def note_reads(self, paths: Iterable[str]) -> None: ...

        def depends_on_every_file(self) -> None: ...

        def aside(self, work: Callable[[], T]) -> AbstractContextManager[Callable[[], T]]: ...


log = logger(__name__)

# A tag as plain data: (path, (line, column, end line, end column), name, shape, text, via).
_PlainTag = tuple[str, tuple[int, int, int, int], str | None, str | None, str, str | None]
# `_package_tags_plain`'s answer: the tags; each package's files; whether each file of them
# mentions a tag; the words followed; the files read; the package files read; the internal
# errors met, each (path, line, stage, error).
_PlainPackageTags = tuple[
    list[_PlainTag],
    dict[str, list[str]],
    dict[str, bool],
    list[str],
    list[str],
    list[str],
    list[tuple[str, int, str, str]],
]


def _plain_span(span: Span) -> tuple[int, int, int, int]:
    return span.start.line, span.start.column, span.end.line, span.end.column


SIMILAR = 0.6  # difflib's ratio from which a tagged name is offered for an untagged one
# Where the name a `checkpoint_name` mention is given is looked for first: the bytes after it.
TAG_WINDOW = 400
_TAG_MENTION = re.compile(re.escape(TAG_FUNCTION.encode()))


class TagSet:
    __slots__ = ("tags",)

    def __init__(self, tags: list[Tag] | None = None) -> None:
        self.tags: list[Tag] = tags if tags is not None else []

    def carries(self, name: str) -> bool:
        return any(tag.carries(name) for tag in self.tags)

    def places(self, name: str) -> list[Tag]:
        """The tags that name `name` by its text or its shape (wildcards left out)."""
        return [tag for tag in self.tags if not tag.is_wildcard and tag.carries(name)]

    def names(self) -> list[str]:
        return sorted({tag.name for tag in self.tags if tag.name is not None})

    def closest(self, name: str) -> Suggestion | None:
        """The tagged name closest to `name`, else the tag of a shape whose fixed text is close
        to it (`f"layer_{i}"` for "lyer_1"); None when nothing tagged looks like it."""
        import difflib  # here: only a name that no tag carries asks

        found = difflib.get_close_matches(name, self.names(), n=1, cutoff=SIMILAR)
        if found:
            return Suggestion(found[0], exact=True)
        best = max(
            (
                (difflib.SequenceMatcher(None, name, tag.fixed_text).ratio(), tag.text)
                for tag in self.tags
                if tag.shape
            ),
            default=None,
        )
        return Suggestion(best[1], exact=False) if best and best[0] >= SIMILAR else None


class Suggestion(Record):
    __slots__ = ("text", "exact")
    text: str  # a name, or how a shape is written (`f"layer_{i}"`)
    exact: bool  # a name that can replace the one written

    def __init__(self, text: str, exact: bool) -> None:
        self._assign(text, exact)


def _tag_windows(data: bytes) -> bytes:
    """The bytes just after each `checkpoint_name` mention, each window on a line of its own."""
    return b"\n".join(data[m.end() : m.end() + TAG_WINDOW] for m in _TAG_MENTION.finditer(data))


class Corpus:
    """Files joined into one text, so that a word is looked for in all of them in one search
    (a search per file costs more than the bytes it reads, over thousands of package files)."""

    def __init__(self, paths: list[str], texts: list[bytes]):
        self._paths = paths
        self._starts = list(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
        self._text = b"\n".join(texts)  # a line break ends a word at each file's end

    def files_with(self, word: str, limit: int) -> list[str] | None:
        """The files holding `word` as a whole word, in order; None if more than `limit` do."""
        encoded = word.encode()
        found: list[str] = []
        at = self._text.find(encoded)
        while at >= 0:
            index = bisect.bisect_right(self._starts, at) - 1
            end = self._starts[index + 1] if index + 1 < len(self._starts) else len(self._text)
            if has_word(word.encode(), self._text, at, end):
                found.append(self._paths[index])
                if len(found) > limit:
                    return None
            at = self._text.find(encoded, end)
        return found


def _quoting(names: set[str], files: dict[str, bytes]) -> dict[str, tuple[set[str], set[str]]]:
    """The `names` each file quotes (just after a `checkpoint_name` mention, and anywhere); a
    whole file is searched only for the names that no window quotes, and nothing is returned
    when one of those is quoted nowhere."""
    quoting = {}
    for path, data in files.items():
        windows = _tag_windows(data)
        near = {name for name in names if quoted(name, windows)}
        quoting[path] = (near, near)
    elsewhere = names.difference(*(near for near, _ in quoting.values()))
    for path, (near, _) in quoting.items():
        quoting[path] = (near, near | {name for name in elsewhere if quoted(name, files[path])})
    if not elsewhere <= set().union(*(anywhere for _, anywhere in quoting.values())):
        return {}
    return quoting


def _around_heaviest(
    packages: list[str], files: dict[str, list[str]]
) -> tuple[list[str], list[str], list[str]]:
    """`packages` (sorted) cut around the one with the most files (the first on a tie): those
    before it, it alone (none of none), those after it."""
    if not packages:
        return [], [], []
    at = packages.index(max(packages, key=lambda name: len(files[name])))
    return packages[:at], packages[at : at + 1], packages[at + 1 :]


class NameIndex:
    def __init__(self, workspace: NameSources):
        self._sources = workspace
        self._files: list[str] | None = None  # the workspace's files
        # What a byte search tells of a workspace file, each asked apart (a check asks only the
        # first, of every file): whether it mentions checkpoint_name, a factory of names.
        self._tagging: dict[str, bool] = {}
        self._naming: dict[str, bool] = {}
        self._imports: dict[str, frozenset[str]] = {}  # read only when installed packages are
        self._packages: dict[str, list[str]] = {}  # imported top-level name -> its files
        self._package_summaries: dict[str, bool] = {}  # package file -> mentions a tag
        self._word_files: dict[tuple[str, str | None], list[str] | None] = {}
        self._facts: dict[str, FileFacts | None] = {}
        self._uses: dict[str, list[NameUse]] = {}
        self._tags: TagSet | None = None
        self._own_tags: list[Tag] | None = None  # the workspace's tags alone
        # Tags of names written as strings in the `checkpoint_name` calls of the files read for
        # them (a proof that a name is tagged, which reads no name flow), by name.
        self._written: dict[str, Tag] = {}
        self._written_read: set[str] = set()
        self._followed: set[str] = set()  # words the last build followed
        self._read: set[str] = set()  # files the last build read
        self._read_packages: set[str] = set()  # package files among them
        self._changed: set[str] = set()  # files whose change reset the tags, until affected_by()
        self._bytes: dict[str, bytes | None] | None = None  # during a build
        self._open: set[str] = set()  # the paths of the open buffers, during a build
        self._corpora: dict[str | None, Corpus] = {}  # by package, during a build
        # The installed packages' tags being read beside since a batch began (packages_ahead).
        self._packages_ahead: Callable[[], _PlainPackageTags] | None = None

    # Keeping current ---------------------------------------------------------------------------
    def invalidate(self, path: str) -> None:
        """`path` changed (an edit, a save, a deletion, a new file)."""
        before = self._tagging.pop(path, None)
        self._naming.pop(path, None)
        self._imports.pop(path, None)
        self._facts.pop(path, None)
        self._uses.pop(path, None)
        if self._files is None:
            return
        data = self._sources.read(path)
        if data is None:
            self._files = [f for f in self._files if f != path]
        elif path not in self._files and self._sources.in_roots(path):
            self._files.append(path)
        for (word, package), found in self._word_files.items():
            if package is None and found is not None:
                found[:] = [f for f in found if f != path]
                if data is not None and has_word(word.encode(), data):
                    found.append(path)
        tags = bool(before) or (data is not None and self._tags_here(path))
        new_imports = data is not None and not self._imports_of(path) <= set(self._packages)
        followed = path in self._read or (
            data is not None and any(has_word(w.encode(), data) for w in self._followed)
        )
        if tags or new_imports or followed:
            self._tags = self._own_tags = None
            self._changed.add(path)
        # The names written in other files' tags stay proven: only this file is read again.
        self._written = {name: tag for name, tag in self._written.items() if tag.place.path != path}
        self._written_read.discard(path)

    def affected_by(self, path: str) -> set[str]:
        """The files that name checkpoint names, when a change of `path` may have changed the tags."""
        if path not in self._changed:
            return set()
        self._changed.discard(path)
        return {f for f in self._root_files() if self._names_here(f)}

    # Reading ----------------------------------------------------------------------------------
    def _root_files(self) -> list[str]:
        if self._files is None:
            self._files = self._sources.python_files()
        return self._files

    def _tags_here(self, path: str) -> bool:
        """Whether the workspace file at `path` mentions checkpoint_name."""
        if path not in self._tagging:
            self._tagging[path] = mentions_tag(self._read_bytes(path) or b"")
        return self._tagging[path]

    def _names_here(self, path: str) -> bool:
        """Whether the workspace file at `path` mentions a factory of names."""
        if path not in self._naming:
            self._naming[path] = may_name_checkpoint_names(self._read_bytes(path) or b"")
        return self._naming[path]

    def _imports_of(self, path: str) -> frozenset[str]:
        if path not in self._imports:
            self._imports[path] = frozenset(imported_packages(self._read_bytes(path) or b""))
        return self._imports[path]

    def _file_facts(self, path: str) -> FileFacts | None:
        self._read.add(path)
        if path not in self._facts:
            # A file of tags: the module its tags were read from (the flow compares the functions
            # they sit in by identity), parsed as far as its sites and tags need; the rest on demand.
            module = self._tag_module(path) if self._mentions_tag(path) else None
            if module is not None:
                module.parse_methods()  # FileFacts reads what the tree leaves out only between its statements
                self._facts[path] = FileFacts(path, module.source)
            else:
                data = self._sources.read(path)
                self._facts[path] = FileFacts.unparsed(path, data) if data is not None else None
        return self._facts[path]

    def _tag_module(self, path: str, whole: bool = False) -> Module | None:
        """The module of a file of tags, every `checkpoint_name` call walked, parsed as far as
        its sites and tags need (or `whole`)."""
        module = self._sources.load(path, partially=True)
        if module is not None and module.unwalked_tags:
            guarded(module.walk_tags, None, self._sources.internal_errors, path, 0, "reading its tags")
        return self._sources.load(path) if whole and module is not None else module

    def _read_bytes(self, path: str) -> bytes | None:
        """A file's bytes, read once per build (the word searches read every file), through the
        workspace only where a buffer is open: it reads thousands of package files."""
        if self._bytes is None:
            return self._sources.read(path)
        if path not in self._bytes:
            opened = self._open and os.path.abspath(path) in self._open
            self._bytes[path] = self._sources.read(path) if opened else read_file(path)
        return self._bytes[path]

    def _mentions_tag(self, path: str) -> bool:
        if path in self._package_summaries:
            return self._package_summaries[path]
        return self._tags_here(path)

    def _files_with(self, word: str, package: str | None) -> list[str] | None:
        """The files holding `word`: the workspace's, and those of `package`; None if too many."""
        key = (word, package)
        if key not in self._word_files:
            self._word_files[key] = self._corpus(package).files_with(word, MAX_FILES)
        return self._word_files[key]

    def _corpus(self, package: str | None) -> Corpus:
        """The workspace's files, and those of `package`, joined for searching (kept for a build)."""
        corpus = self._corpora.get(package)
        if corpus is None:
            paths = [*self._root_files(), *(self._packages.get(package, []) if package else [])]
            corpus = Corpus(paths, [self._read_bytes(path) or b"" for path in paths])
            if self._bytes is not None:
                self._corpora[package] = corpus
        return corpus

    # The names --------------------------------------------------------------------------------
    def tags(self) -> TagSet:
        """Every tag in reach. A check that asks depends on every file of the workspace (any may
        come to tag a name) and on the package files read: the workspace is told so."""
        if self._tags is None:
            ahead = self._take_packages_ahead if self._packages_ahead is not None else None
            self._tags = self._reading(lambda: self._build(ahead))
        self._sources.depends_on_every_file()
        self._sources.note_reads(self._read_packages)
        return self._tags

    def tags_carrying(self, names: Iterable[str]) -> TagSet:
        """Tags that carry every one of `names` when the workspace's own tags do, else every tag
        in reach. Cheapest first: the tags that name them in a string written in the call (a few
        files read), then the workspace's own tags as far as following their names finds them
        (the files that quote them read first), then all of its own, then the installed
        packages' too."""
        wanted = set(names)
        if self._tags is None:
            found = TagSet(self._reading(lambda: self._written_carrying(wanted)))
            if self._carry_all(found, wanted):
                return found
            # The installed packages' tags, needed when the workspace's own leave a name
            # untagged, are read beside (a forked process) while the workspace's are.
            with self._package_tags_beside() as package_tags:
                if self._own_tags is None:
                    left = {name for name in wanted if not found.carries(name)}
                    found = TagSet(found.tags + self._reading(lambda: self._own_naming(left)))
                    if self._carry_all(found, wanted):
                        return found
                found = TagSet(self._reading(lambda: shapes_of(self._own())))
                if self._carry_all(found, wanted):
                    return found
                self._tags = self._reading(lambda: self._build(package_tags))
        return self.tags()

    def _carry_all(self, found: TagSet, names: set[str]) -> bool:
        """Whether `found` carries every one of `names`: the check that asked then depends on
        every file of the workspace (any may come to tag a name), and the workspace is told so."""
        if not all(found.carries(name) for name in names):
            return False
        self._sources.depends_on_every_file()
        return True

    @contextmanager
    def packages_ahead(self) -> Iterator[None]:
        """A block in which the installed packages' tags are read beside from its start, for a
        `tags_carrying` or `tags` in it that needs them: a batch check starts them before its
        first file, not when a file that names a checkpoint name asks; a process left unasked is
        stopped."""
        with self._sources.aside(lambda: self._reading(self._package_tags_plain)) as package_tags:
            self._packages_ahead = package_tags
            try:
                yield
            finally:
                self._packages_ahead = None

    def _package_tags_beside(self) -> AbstractContextManager[Callable[[], _PlainPackageTags]]:
        """The installed packages' tags, read beside: since `packages_ahead` began, else from now."""
        if self._packages_ahead is None:
            return self._sources.aside(lambda: self._reading(self._package_tags_plain))
        return nullcontext(self._take_packages_ahead)

    def _take_packages_ahead(self) -> _PlainPackageTags:
        """The answer of `packages_ahead`'s process, which can be taken once (then made here)."""
        ahead, self._packages_ahead = self._packages_ahead, None
        return ahead() if ahead is not None else self._package_tags_plain()

    def _reading(self, build: Callable[[], T]) -> T:
        """`build()` with each file's bytes read once (the word searches read every file)."""
        if self._bytes is not None:  # within a build already
            return build()
        self._bytes, self._open = {}, set(self._sources.buffers())
        try:
            return build()
        finally:
            self._bytes, self._corpora = None, {}

    def _own(self) -> list[Tag]:
        if self._own_tags is None:
            self._followed, self._read, self._read_packages = set(), set(), set()
            files = [path for path in self._root_files() if self._tags_here(path)]
            self._own_tags = [tag for path in files for tag in self._tags_in(path, None)]
        return self._own_tags

    def _own_naming(self, names: set[str]) -> list[Tag]:
        """Tags of the workspace's own, up to those named each of `names` (all of them when one
        is named by none): the name flow reads first the files that quote a name still wanted,
        and stops once every one is found. Kept for no other check: they are not all the tags."""
        flow = NameFlow(self._file_facts, lambda word: self._quoting_first(word, flow), wanted=names)
        tags: list[Tag] = []
        for path in self._root_files():
            if flow.enough:
                break
            if self._tags_here(path):
                tags += self._tags_in(path, None, flow)
        return tags

    def _quoting_first(self, word: str, flow: NameFlow) -> list[str] | None:
        """The workspace's files holding `word`, those that quote a name `flow` still wants first."""
        found = self._files_with(word, None)
        if found is None or not flow.wanted:
            return found
        wanted = flow.wanted

        def quotes_none(path: str) -> bool:
            data = self._read_bytes(path) or b""
            return not any(quoted(name, data) for name in wanted)

        return sorted(found, key=quotes_none)  # stable: in the files' order otherwise

    def _written_carrying(self, names: set[str]) -> list[Tag]:
        """For each of `names` that one is found for, a tag that names it in a string written in
        the `checkpoint_name` call. The files read are the workspace's that mention a tag and
        quote the name, those that quote most of the names left just after a mention first; none
        when some name is quoted in none of them (all must be found for the tags to be of use)."""
        left = names - set(self._written)
        files = {
            path: self._read_bytes(path) or b""
            for path in (self._root_files() if left else ())
            if path not in self._written_read and self._tags_here(path)
        }
        quoting = _quoting(left, files)
        while left:
            path = max(
                quoting, key=lambda p: (len(quoting[p][0] & left), len(quoting[p][1] & left)), default=None
            )
            if path is None or not quoting[path][1] & left:
                break
            del quoting[path]
            self._written_read.add(path)
            for tag in self._written_in(path):
                self._written.setdefault(tag.name or "", tag)
            left = names - set(self._written)
        return [self._written[name] for name in names if name in self._written]

    def _written_in(self, path: str) -> list[Tag]:
        def collect() -> list[Tag]:
            # Parsed as far as finding sites and tags needs: a `checkpoint_name` call is walked.
            module = self._tag_module(path)
            if module is None:
                return []
            found = (written_tag(path, module.source, expr) for _, expr, _ in tag_calls(module))
            return [tag for tag in found if tag is not None]

        errors = self._sources.internal_errors
        return guarded(collect, [], errors, path, 0, "reading its checkpoint_name tags")

    def _build(self, package_tags: Callable[[], _PlainPackageTags] | None = None) -> TagSet:
        """The workspace's tags and the installed packages'. Given `package_tags` (the answer of
        `_package_tags_plain`, made elsewhere: the heaviest package's), the other packages' are
        read here meanwhile."""
        tags = list(self._own())
        packages = self._imported_packages()
        if package_tags is None:
            return TagSet(shapes_of(tags + self._package_tags(packages)))
        before, _, after = _around_heaviest(packages, self._packages)
        tags += self._package_tags(before)
        tags_after = self._package_tags(after)
        return TagSet(shapes_of(tags + self._learn_package_tags(package_tags()) + tags_after))

    def _imported_packages(self) -> list[str]:
        """The installed packages the workspace imports, by name, their files found."""
        files = self._root_files()
        imported = set().union(*(self._imports_of(f) for f in files)) if files else set()
        roots = self._sources.roots
        for name in sorted(imported - set(self._packages)):
            self._packages[name] = package_files(name, search_path(self._sources.interpreter), roots)
        return sorted(self._packages)

    def _package_tags(self, packages: Iterable[str]) -> list[Tag]:
        """The tags of installed packages (imported ones, by name)."""
        tags: list[Tag] = []
        for package in packages:
            for path in self._packages[package]:
                if path not in self._package_summaries:
                    data = self._read_bytes(path) or b""
                    self._package_summaries[path] = mentions_tag(data)
                if self._package_summaries[path]:
                    self._read_packages.add(path)
                    tags += self._tags_in(path, package)
        return tags

    def _package_tags_plain(self) -> _PlainPackageTags:
        """The tags of the heaviest imported package (the one of most files: JAX, in a JAX project)
        and what reading them learnt, as plain data, for `_learn_package_tags` in another process
        (forked before the workspace's own tags were read) or in this one."""
        errors = self._sources.internal_errors
        known_errors = len(errors)
        kept = self._followed, self._read, self._read_packages
        self._followed, self._read, self._read_packages = set(), set(), set()
        try:
            tags = [
                (t.place.path, _plain_span(t.place.span), t.name, t.shape, t.text, t.via)
                for t in self._package_tags(_around_heaviest(self._imported_packages(), self._packages)[1])
            ]
            return (
                tags,
                dict(self._packages),
                dict(self._package_summaries),
                sorted(self._followed),
                sorted(self._read),
                sorted(self._read_packages),
                [(e.path, e.line, e.stage, e.error) for e in errors[known_errors:]],
            )
        finally:
            del errors[known_errors:]  # given back with the rest
            self._followed, self._read, self._read_packages = kept

    def _learn_package_tags(self, plain: _PlainPackageTags) -> list[Tag]:
        """What `_package_tags_plain` answered: its tags, and what it learnt kept here."""
        tags, packages, summaries, followed, read, read_packages, errors = plain
        self._packages.update(packages)
        self._package_summaries.update(summaries)
        self._followed.update(followed)
        self._read.update(read)
        self._read_packages.update(read_packages)
        self._sources.internal_errors.extend(InternalError(*error) for error in errors)
        return [
            Tag(Place(path, Span.of(*span)), name, shape, text, via)
            for path, span, name, shape, text, via in tags
        ]

    def _tags_in(self, path: str, package: str | None, flow: NameFlow | None = None) -> list[Tag]:
        """The tags of a file, their names followed by `flow` (given when it follows names for
        other files too), else by a flow of the file's own."""
        errors = self._sources.internal_errors

        def files_with(word: str) -> list[str] | None:
            found = self._files_with(word, package)
            if package is not None and found:
                self._read_packages.update(set(found) & set(self._packages[package]))
            return found

        def collect() -> list[Tag]:
            # A name written in the call needs no name flow, nor the file parsed past its tags:
            # the whole file is parsed (the same module, completed) only for a name to follow,
            # or when `checkpoint_name` goes by another name (a call of which holds no trigger).
            module = self._tag_module(path)
            if module is not None and callee_names(module, [TAG_FUNCTION]) != {TAG_FUNCTION}:
                module = self._tag_module(path, whole=True)
            if module is None:
                return []
            following = flow or NameFlow(self._file_facts, files_with)
            found = []
            for _, expr, functions in list(tag_calls(module)):
                if following.enough:
                    break
                written = written_tag(path, module.source, expr)
                facts = self._file_facts(path) if written is None else None
                if written is not None:
                    found.append(written)
                    following.found([written])
                elif facts is not None:
                    found += following.tags(facts, expr, functions)
            self._followed |= following.words
            self._read.add(path)
            return found

        found: list[Tag] = guarded(collect, [], errors, path, 0, "reading its checkpoint_name tags")
        if package is not None:
            self._sources.release(path)
        return found

    def uses(self) -> list[NameUse]:
        """Every name given to a factory of names in the workspace."""
        found = []
        for path in self._root_files():
            if self._names_here(path):
                found += self.uses_in(path)
        return found

    def uses_in(self, path: str) -> list[NameUse]:
        if path not in self._uses:
            module = self._sources.load(path)
            errors = self._sources.internal_errors
            self._uses[path] = (
                guarded(lambda: name_uses(module), [], errors, path, 0, "reading its checkpoint names")
                if module
                else []
            )
        return self._uses[path]

    # At a position ----------------------------------------------------------------------------
    def name_at(self, path: str, position: Position) -> tuple[str, Place] | None:
        """The checkpoint name written at `position`: a name given to a factory, or a tag."""
        for use in self.uses():
            if use.place.path == path and use.place.span.start <= position <= use.place.span.end:
                return use.name, use.place
        for tag in self.tags().tags:
            if (
                tag.name is not None
                and tag.place.path == path
                and tag.place.span.start <= position <= tag.place.span.end
            ):
                return tag.name, tag.place
        return None
