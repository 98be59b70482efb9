"""A set of root folders, the open buffers over them, and the policy sites they hold.

Files that cannot hold a policy site are skipped by a byte search and never parsed;
a module that defines a policy used elsewhere is parsed when a site leads to it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Finding, InternalError, Position, Span
from jax_lsp.core.guard import WorkLock, deep, guarded
from jax_lsp.core.logger import logger
from jax_lsp.core.notebooks.files import is_notebook, parse_notebook
from jax_lsp.core.packages import read_always, read_file, read_once_under
from jax_lsp.core.text.python_versions import ProjectPythons
from jax_lsp.core.text.triggers import could_hold_site
from jax_lsp.engine.files import discover, discover_names
from jax_lsp.engine.imports import ImportResolver
from jax_lsp.engine.jedi_names import JediNames

# The parser and the analysis are imported where they are used: a `jax-lsp check` whose results
# all come from the cache runs none of them, and start-up time is most of such a run.
if TYPE_CHECKING:
    import ast

    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.jax_facts import JaxFacts
    from jax_lsp.core.policies.describe import PolicyDescription
    from jax_lsp.core.policies.new_remat import NewRematSwitch
    from jax_lsp.core.policies.resolve import PolicyFunction, Target
    from jax_lsp.core.policies.sites import Site
    from jax_lsp.core.tags.index import NameIndex
    from jax_lsp.core.text.deferred import DeferredDefinition
    from jax_lsp.core.text.source import ParseCache, SourceModule
    from jax_lsp.engine.jax_reach import JaxReach
    from jax_lsp.rules import Project

log = logger(__name__)


def _parse_for_sites(data: bytes, path: str) -> tuple[SourceModule, list[DeferredDefinition]] | None:
    """A file parsed as far as finding its sites needs, with the definitions left for later;
    None when it has to be parsed whole (source.parse_for_sites)."""
    from jax_lsp.core.text.decoding import decode
    from jax_lsp.core.text.deferred import parse_for_sites
    from jax_lsp.core.text.source import SourceModule

    text, encoding, problem = decode(data)
    partial = None if problem else parse_for_sites(text, path)
    if partial is None:
        return None
    tree, deferred = partial
    return SourceModule(path, text, tree, encoding=encoding), deferred


def _key(path: Path | str) -> str:
    return os.path.abspath(os.fspath(path))


class Workspace:
    def __init__(
        self,
        roots: Iterable[Path] = (),
        settings: Settings | None = None,
        interpreter: str | None = None,
        jedi_in_background: bool = False,
    ):
        self.roots = [Path(_key(r)) for r in roots]
        self.settings = settings or Settings()
        self.interpreter = interpreter
        self._lock = WorkLock()  # an RLock that deep() workers share with their caller
        self._overlays: dict[str, str] = {}
        self._parse_caches: dict[str, ParseCache] = {}  # per open buffer
        # requires-python per file, and the statements skipped for needing a newer Python
        self.pythons = ProjectPythons(self.roots, self.settings.target_version, self._read_by_analysis)
        self._modules: dict[str, tuple[object, Module | None]] = {}
        self._for_sites: dict[str, tuple[object, Module | None]] = {}  # parsed only as far as sites need
        self.imports = ImportResolver(self.roots, self.settings.src, self._overlays.__contains__)
        # path of a module with sites -> paths of the modules its sites' policies live in
        self._site_targets: dict[str, set[str]] = {}
        # targets a file's sites had before its latest change, until affected_files() is asked
        self._previous_targets: dict[str, set[str]] = {}
        self._indexed = False
        # Inline (CLI): jedi is asked while sites are found. In the background (server): finding
        # sites only notes the callees for jedi, and refine_with_jedi() asks it off the lock.
        self.jedi = JediNames(
            self.roots[0] if self.roots else None, interpreter, self.settings.jedi_budget, jedi_in_background
        )
        self.jedi.depends = self.note_reads  # an answer depends on what jedi read for it
        self._reach: JaxReach | None = None
        self._site_cache: dict[str, tuple[Module, list[tuple[Site, list[Target]]]]] = {}
        self.internal_errors: list[InternalError] = []
        self._load_recorders: list[set[str]] = []
        self._names: NameIndex | None = None
        self._new_remat: tuple[NewRematSwitch | None] | None = None  # (the answer,) once asked
        self._jax_facts: JaxFacts | None = None
        self._jax_version: tuple[str | None] | None = None  # (the version,) once read
        self._unchanging = False  # inside unchanging(), or a batch's worker
        self._files_unchanged: list[str] | None = None  # python_files(), once asked while unchanging

    def take_internal_errors(self) -> list[InternalError]:
        """The analysis bugs met since the last call (each cost one site, policy or file)."""
        with self._lock:
            errors, self.internal_errors = self.internal_errors, []
            return errors

    # Buffers and disk --------------------------------------------------------
    def set_document(self, path: Path | str, text: str) -> None:
        with self._lock:
            self._overlays[_key(path)] = text
            self._forget(_key(path))

    def close_document(self, path: Path | str) -> None:
        with self._lock:
            self._overlays.pop(_key(path), None)
            self._parse_caches.pop(_key(path), None)
            self._forget(_key(path))

    def file_changed(self, path: Path | str) -> None:
        with self._lock:
            self._forget(_key(path))
            self.jedi.file_changed(_key(path))
            if self._reach is not None:
                self._reach.forget(None)  # a new or deleted file changes what imports resolve to

    def _forget(self, key: str) -> None:
        self._modules.pop(key, None)
        self._for_sites.pop(key, None)
        self.imports.forget()
        if self._reach is not None:
            self._reach.forget(key)
        self._site_cache.clear()  # sites elsewhere may resolve into this module
        self._previous_targets.setdefault(key, set()).update(self._site_targets.get(key, ()))
        if self._indexed:
            self._index_file(key)
        if self._names is not None:
            self._names.invalidate(key)
        if self._new_remat is not None and (self._new_remat[0] is not None or self._may_switch(key)):
            self._new_remat = None

    def _may_switch(self, key: str) -> bool:
        from jax_lsp.core.policies.new_remat import could_turn_on

        data = self.read(key)
        return data is not None and could_turn_on(data)

    # Loading modules -----------------------------------------------------------
    def _stamp(self, key: str):
        if key in self._overlays:
            return ("overlay", id(self._overlays[key]))
        try:
            stat = os.stat(key)
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def load(self, path: Path | str, only_if_site: bool = False, partially: bool = False) -> Module | None:
        """The parsed module at `path` (None if unreadable, or if `only_if_site` and it cannot hold one).

        With `only_if_site` or `partially`, a file on disk may come back parsed only as far as its
        sites need (source.parse_for_sites): its deferred definitions are parsed when a name leads
        to them, and a syntax error in one that nothing leads to is never reported. Asked whole
        later, the same module object parses the rest: every analysis sees one module per file."""
        from jax_lsp.core.binding.module import Module
        from jax_lsp.core.text.source import ParseCache, parse_bytes, parse_text

        key = _key(path)
        with self._lock:
            self._read_by_analysis(key)
            stamp = self._stamp(key)
            cached = self._modules.get(key)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            source: SourceModule | None
            for_sites = self._for_sites.get(key)
            if for_sites is not None and for_sites[0] == stamp and for_sites[1] is not None:
                if only_if_site or partially:
                    return for_sites[1]
                del self._for_sites[key]
                whole = for_sites[1]
                guarded(whole.parse_deferred, None, self.internal_errors, key, 0, "reading its scopes")
                self.pythons.record(key, whole.source.skipped)
                self._modules[key] = (stamp, whole)
                return whole
            deferred: list[DeferredDefinition] = []
            if key in self._overlays:
                text = self._overlays[key]
                if only_if_site and not could_hold_site(text.encode("utf-8", "surrogatepass")):
                    return None
                source = parse_text(
                    text, key, cache=self._parse_caches.setdefault(key, ParseCache()), pythons=self.pythons
                )
            else:
                data = read_file(key)
                if data is None:
                    self._modules[key] = (stamp, None)
                    return None
                if is_notebook(key):
                    source = parse_notebook(data, key, only_if_site, self.pythons)
                elif not (only_if_site or partially):
                    source = parse_bytes(data, key, self.pythons)
                elif partially or could_hold_site(data):
                    partial = _parse_for_sites(data, key)
                    source = parse_bytes(data, key, self.pythons) if partial is None else partial[0]
                    deferred = [] if partial is None else partial[1]
                else:
                    source = None
                if source is None:
                    return None
            name, is_package = self.imports.module_name(key)
            module = guarded(
                lambda: Module(source, name, is_package, self, deferred),
                None,
                self.internal_errors,
                key,
                0,
                "reading its scopes",
            )
            if deferred:
                self._for_sites[key] = (stamp, module)
            else:
                self.pythons.record(key, source.skipped)
                self._modules[key] = (stamp, module)
            return module

    def buffers(self) -> dict[str, str]:
        """The open buffers' texts, by path."""
        with self._lock:
            return dict(self._overlays)

    def buffer(self, path: Path | str) -> str | None:
        """The open buffer's text at `path`, or None if none is open there."""
        with self._lock:
            return self._overlays.get(_key(path))

    def read(self, path: Path | str) -> bytes | None:
        """A module's current content: its open buffer (as UTF-8), else the file on disk."""
        key = _key(path)
        with self._lock:
            if key in self._overlays:
                return self._overlays[key].encode("utf-8", "surrogatepass")
        return read_file(key)

    def _read_by_analysis(self, path: str) -> None:
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

    def release(self, path: Path | str) -> None:
        """Free a module's tree and sites (a batch check is done with it); it loads again if asked."""
        with self._lock:
            self._modules.pop(_key(path), None)
            self._for_sites.pop(_key(path), None)
            self._site_cache.pop(_key(path), None)

    def module(self, name: str, importer: Module) -> Module | None:
        """Find a module by dotted name where Python would, seen from the importing file."""
        with self._lock:
            found = self.imports.find(name, importer.path)
        return self.load(found, partially=True) if found else None

    @property
    def reach(self) -> JaxReach:
        """Whether jedi could name a callee a checkpoint function at all (built on first use:
        a check whose results all come from the cache imports none of it)."""
        from jax_lsp.engine.jax_reach import JaxReach

        with self._lock:
            if self._reach is None:
                self._reach = JaxReach(
                    lambda path: self.read(path),
                    lambda importer: [str(folder) for folder in self.imports.folders(importer)],
                    lambda path: path in self._overlays,
                    self.python_files,
                    self.imports.module_name,
                    self.interpreter,
                )
            return self._reach

    def jedi_qualname(self, module: Module, node: ast.expr) -> str | None:
        """What jedi says a callee is, when the file's imports cannot tell (see jedi_names);
        not asked where nothing in reach leads to JAX (see jax_reach)."""
        if self.jedi.budget > 0 and not self.reach.jedi_could_name(module, node):
            self.jedi.not_needed(module.path)
            return None
        return self.jedi.qualname(module, node)

    def refine_with_jedi(self, path: Path | str, text: str) -> bool:
        """Background mode: ask jedi about the callees that finding the sites of `path` (as
        `text`) left to it. jedi runs without the lock. True when `path` should be checked again."""
        key = _key(path)
        if not self.jedi.refine(key, text):
            return False
        with self._lock:
            self._site_cache.pop(key, None)
            self._previous_targets.setdefault(key, set()).update(self._site_targets.get(key, ()))
        return True

    # Sites -------------------------------------------------------------------
    def sites(self, module: Module) -> list[tuple[Site, list[Target]]]:
        """The module's policy sites, each with the definitions its policy reaches."""
        from jax_lsp.engine.analysis import resolved_sites

        # Kept here, not on the module: a module holding its sites (which hold it) would be a
        # reference cycle, freed only by the cyclic GC, which then scans every parsed tree.
        with self._lock:
            cached = self._site_cache.get(module.path)
            if cached is None or cached[0] is not module:
                cached = self._site_cache[module.path] = (
                    module,
                    resolved_sites(module, self.internal_errors),
                )
            return cached[1]

    def _index_file(self, key: str) -> None:
        from jax_lsp.core.policies.resolve import PolicyFunction

        module = self.load(key, only_if_site=True)
        targets: set[str] = set()
        if module is not None:
            for _, resolved in self.sites(module):
                targets.update(t.module.path for t in resolved if isinstance(t, PolicyFunction))
            targets.discard(key)
        if targets:
            self._site_targets[key] = targets
        else:
            self._site_targets.pop(key, None)

    def index(
        self,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        """Find the policy sites of every file under the roots (for cross-module findings)."""
        files = discover(self.roots, self.settings.exclude) if self.roots else []
        for done, path in enumerate(files, 1):
            if cancelled and cancelled():
                return
            with self._lock:
                try:
                    self._index_file(_key(path))
                except (RecursionError, MemoryError, ValueError) as exc:  # one odd file never stops the rest
                    log.warning("cannot index %s: %s: %s", path, type(exc).__name__, exc)
            if progress:
                progress(done, len(files))
        with self._lock:
            self._indexed = True

    def index_users(self, paths: Iterable[Path | str], jobs: int = 1) -> None:
        """Index only the files that could use a policy defined in `paths` (pre-commit names the
        changed files): those that could hold a site and import something `paths` define."""
        for path in self.users_of(paths, jobs):
            with self._lock:
                self._index_file(_key(path))

    def users_of(self, paths: Iterable[Path | str], jobs: int = 1) -> Iterator[Path]:
        """The files that could use a policy defined in `paths`, as they are found: those that
        could hold a site and import something `paths` define (engine.users); found by reading,
        not parsing.

        With `jobs` > 1, a forked process finds and reads the files (engine.forked) while this
        one parses the named modules and finds their own sites, which checking them needs next;
        then this one tells each file the child sends while it reads the next."""
        from jax_lsp.engine.forked import InChild
        from jax_lsp.engine.users import Exported, UserSearch, searched

        def read_all() -> Iterator[list[tuple[str, bytes]]]:
            # Each under a root, which is absolute and normalized: already as _key gives it.
            return searched(discover_names(self.roots, self.settings.exclude) if self.roots else [])

        with InChild(read_all, fork=jobs > 1) as child:
            with self._lock:
                modules = [module for module in (self.load(p) for p in paths) if module is not None]
                if jobs > 1:
                    for module in modules:
                        self.sites(module)
            named = [
                Exported(
                    module.name,
                    Path(module.path),
                    frozenset(
                        name
                        for name, bindings in module.scope.bindings.items()
                        if any(b.kind != "import" for b in bindings)
                    ),
                )
                for module in modules
            ]
            batches = child.items()
            packages = {Path(path): data for path, data in next(batches, [])}
            search = UserSearch(packages, named, lambda p: self.imports.module_name(str(p))[0])
            yield from (path for path, data in packages.items() if search.is_user(path, data))
            for batch in batches:
                yield from (Path(path) for path, data in batch if search.is_user(Path(path), data))

    def _foreign_policies(self, key: str) -> list[PolicyFunction]:
        from jax_lsp.core.policies.resolve import PolicyFunction

        found = []
        for site_file, targets in list(self._site_targets.items()):
            if key in targets and site_file != key:
                module = self.load(site_file, only_if_site=True)
                if module is not None:
                    found += [
                        t
                        for _, resolved in self.sites(module)
                        for t in resolved
                        if isinstance(t, PolicyFunction) and t.module.path == key
                    ]
        return found

    # Checking ----------------------------------------------------------------
    def check_file(self, path: Path | str) -> list[Finding]:
        from jax_lsp.engine.analysis import check_module

        key = _key(path)
        with self._lock:
            module = self.load(key)
            if module is None:
                return []
            foreign = self._foreign_policies(key)
            return check_module(
                module,
                self.sites(module),
                foreign,
                self.settings,
                self.internal_errors,
                self.project(),
            )

    def describe_policy(self, path: Path | str, line: int, column: int) -> PolicyDescription | None:
        """The policy (site value or `def`) at a 0-based line and code-point column, for hover."""
        from jax_lsp.core.policies.describe import describe_at
        from jax_lsp.core.policies.resolve import PolicyFunction

        key = _key(path)
        with self._lock:
            module = self.load(key)
            if module is None:
                return None
            sites = self.sites(module)
            here = [(site.value, targets) for site, targets in sites if site.value is not None]
            functions = [t for _, targets in sites for t in targets if isinstance(t, PolicyFunction)]
            functions = [f for f in [*functions, *self._foreign_policies(key)] if f.module is module]
            return deep(lambda: describe_at(module, here, functions, Position(line, column)))

    def affected_files(self, path: Path | str) -> set[Path]:
        """Other files whose findings may change when `path` changes."""
        key = _key(path)
        with self._lock:
            before = self._previous_targets.pop(key, set()) | self._site_targets.get(key, set())
            self._index_file(key)
            after = self._site_targets.get(key, set())
            users = {site for site, targets in self._site_targets.items() if key in targets}
            naming = self._names.affected_by(key) if self._names is not None else set()
        return {Path(p) for p in (before | after | users | naming) if p != key}

    # What rules know of the project -----------------------------------------------------
    def project(self) -> Project:
        from jax_lsp.rules import Project

        return Project(self.checkpoint_names, self.jax_facts, self.new_remat_switch)

    def jax_version(self) -> str | None:
        """The JAX release installed for the project (the interpreter's), from its metadata."""
        from jax_lsp.core.jax_facts import installed_jax_version

        if self._jax_version is None:
            self._jax_version = (installed_jax_version(self.interpreter),)
        return self._jax_version[0]

    def jax_facts(self) -> JaxFacts:
        """The facts of the JAX release installed for the project (the newest when none is)."""
        from jax_lsp.core.jax_facts import facts_for

        if self._jax_facts is None:
            self._jax_facts = facts_for(self.jax_version())
        return self._jax_facts

    def new_remat_switch(self) -> NewRematSwitch | None:
        """Where the project turns on JAX's new remat (`jax_remat3`): the first switch in its
        files (read once, and again when one that may hold a switch changes), else None; with
        the setting `new-remat = "always"`, that setting. A check that asks depends on every
        file: any may come to hold a switch (the result cache is told so)."""
        from jax_lsp.core.policies.new_remat import NewRematSwitch, could_turn_on

        if self.settings.new_remat == "always":
            return NewRematSwitch(None, None)
        with self._lock:
            if self._new_remat is None:
                found = None
                for key in self.python_files():
                    # A byte search of each file, as the prefilter's: not a read for the analysis.
                    overlay = self._overlays.get(key)
                    data = overlay.encode() if overlay is not None else read_file(key)
                    if data is None or not could_turn_on(data):
                        continue
                    span = self._first_switch(key, overlay, data)
                    if span is not None:
                        found = NewRematSwitch(key, span)
                        break
                self._new_remat = (found,)
            self.depends_on_every_file()
            return self._new_remat[0]

    def _first_switch(self, key: str, overlay: str | None, data: bytes) -> Span | None:
        """Where a file's first new-remat switch is (a notebook is loaded whole: its cells place it)."""
        from jax_lsp.core.policies.new_remat import first_switch, switches_in
        from jax_lsp.core.text.decoding import decode

        if is_notebook(key):
            module = self.load(key)
            switches = [] if module is None else switches_in(module.source.tree, module.source.text)
            return module.source.span(switches[0]) if module is not None and switches else None
        return first_switch(overlay if overlay is not None else decode(data)[0], key)

    # Checkpoint names ------------------------------------------------------------
    def checkpoint_names(self) -> NameIndex:
        """The `checkpoint_name` tags in reach and the names policies give (built on first use)."""
        from jax_lsp.core.tags.index import NameIndex

        with self._lock:
            if self._names is None:
                self._names = NameIndex(self)
            return self._names

    def python_files(self) -> list[str]:
        """Every Python file under the roots, and the open buffers outside them."""
        with self._lock:
            if self._files_unchanged is not None:
                return list(self._files_unchanged)
            # Each under a root, which is absolute and normalized: already as _key gives it.
            found = discover_names(self.roots, self.settings.exclude) if self.roots else []
            found += sorted(set(self._overlays) - set(found))
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

    def in_roots(self, path: Path | str) -> bool:
        return self.imports.root_of(Path(_key(path))) is not None

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
