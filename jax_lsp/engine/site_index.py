"""The policy sites of the workspace's modules, and which modules their policies live in:
resolved per module when asked, and for every file under the roots once indexed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from jax_lsp.core.config import Settings
from jax_lsp.core.findings import InternalError
from jax_lsp.core.guard import WorkLock
from jax_lsp.core.logger import logger
from jax_lsp.engine.files import discover, discover_names
from jax_lsp.engine.imports import ImportResolver
from jax_lsp.engine.module_cache import ModuleCache
from jax_lsp.engine.project_files import path_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.policies.resolve import PolicyFunction, ResolvedPolicy
    from jax_lsp.core.policies.sites import Site

log = logger(__name__)


# The analysis is imported where a site is first resolved: a `jax-lsp check` whose results all
# come from the cache resolves none, and start-up time is most of such a run.
def _resolved_sites(
    module: Module, errors: list[InternalError], findings_only: bool
) -> list[tuple[Site, list[ResolvedPolicy]]]:
    from jax_lsp.engine.analysis import resolved_sites

    return resolved_sites(module, errors, findings_only)


def policy_function() -> type[PolicyFunction]:
    """The class of a resolved policy `def` (imported with the analysis, for the same reason)."""
    from jax_lsp.core.policies.resolve import PolicyFunction

    return PolicyFunction


def reached_elsewhere(
    sites: list[tuple[Site, list[ResolvedPolicy]]], errors: list[InternalError]
) -> list[tuple[Site, list[ResolvedPolicy]]]:
    """What the sites reach in other modules (imported with the analysis, for the same reason)."""
    from jax_lsp.engine.analysis import reached_elsewhere

    return reached_elsewhere(sites, errors)


# The forked reader and the search for users are imported where they are used: only a check of
# named files uses them.
def _search_users(
    files: list[str],
    fork: bool,
    parse_named: Callable[[], list[Module]],
    module_name: Callable[[Path], str],
) -> Iterator[Path]:
    """The `files` that could use a policy that the modules `parse_named` gives define
    (engine.users); with `fork`, those that could hold a site are found by a forked process,
    which sends their names while this one parses."""
    from jax_lsp.engine.forked import InChild
    from jax_lsp.engine.users import Exported, UserSearch, is_package, read_for_search, site_candidates

    with InChild(lambda: site_candidates(files), fork=fork) as child:
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
            for module in parse_named()
        ]
        packages = {
            Path(path): data for path in files if is_package(path) and (data := read_for_search(path))
        }
        search = UserSearch(packages, named, module_name)
        yield from (path for path, data in packages.items() if search.is_user(path, data))
        for batch in child.items():
            for name in batch:
                data = read_for_search(name)
                if data is not None and search.is_user_if_site(Path(name), data):
                    yield Path(name)


class SiteIndex:
    """Each module's resolved sites (kept until a file changes), and, for every file indexed,
    the modules its sites' policies live in. Shares the workspace's lock."""

    def __init__(
        self,
        lock: WorkLock,
        roots: list[Path],
        settings: Settings,
        modules: ModuleCache,
        imports: ImportResolver,
        internal_errors: list[InternalError],
        findings_only: bool = False,
    ):
        self._lock = lock
        self.findings_only = findings_only  # see analysis.resolved_sites
        self._roots = roots
        self._settings = settings
        self._modules = modules
        self._imports = imports
        self._internal_errors = internal_errors
        self._site_cache: dict[str, tuple[Module, list[tuple[Site, list[ResolvedPolicy]]]]] = {}
        # path of a module with sites -> paths of the modules its sites' policies live in
        self._site_targets: dict[str, set[str]] = {}
        # targets a file's sites had before its latest change, until affected() is asked
        self._previous_targets: dict[str, set[str]] = {}
        self._indexed = False

    def sites(self, module: Module) -> list[tuple[Site, list[ResolvedPolicy]]]:
        """The module's policy sites, each with the definitions its policy reaches."""
        # Kept here, not on the module: a module holding its sites (which hold it) would be a
        # reference cycle, freed only by the cyclic GC, which then scans every parsed tree.
        with self._lock:
            cached = self._site_cache.get(module.path)
            if cached is None or cached[0] is not module:
                cached = self._site_cache[module.path] = (
                    module,
                    _resolved_sites(module, self._internal_errors, self.findings_only),
                )
            return cached[1]

    def _index_file(self, key: str) -> None:
        module = self._modules.load(key, only_if_site=True)
        targets: set[str] = set()
        if module is not None:
            for _, reached in reached_elsewhere(self.sites(module), self._internal_errors):
                targets.update(t.module.path for t in reached)
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
        files = discover(self._roots, self._settings.exclude) if self._roots else []
        for done, path in enumerate(files, 1):
            if cancelled and cancelled():
                return
            with self._lock:
                try:
                    self._index_file(path_key(path))
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
                self._index_file(path_key(path))

    def users_of(self, paths: Iterable[Path | str], jobs: int = 1) -> Iterator[Path]:
        """The files that could use a policy defined in `paths`, as they are found: those that
        could hold a site and import something `paths` define (engine.users); found by reading,
        not parsing.

        With `jobs` > 1, a forked process reads the files and names those that could hold a site
        (engine.forked) while this one parses the named modules and finds their own sites, which
        checking them needs next; then this one tells each file the child named, read again from
        the page cache, while the child reads on. The child sends names, not the files' bytes:
        they fit in the pipe, so it never waits for this one to read them."""

        def parse_named() -> list[Module]:
            with self._lock:
                modules = [module for module in (self._modules.load(p) for p in paths) if module is not None]
                if jobs > 1:
                    for module in modules:
                        self.sites(module)
            return modules

        # Each under a root, which is absolute and normalized: already as path_key gives it.
        files = discover_names(self._roots, self._settings.exclude) if self._roots else []
        return _search_users(files, jobs > 1, parse_named, lambda p: self._imports.module_name(str(p))[0])

    def foreign_targets(self, key: str) -> list[tuple[Site, list[ResolvedPolicy]]]:
        """The sites of other indexed files, each with what it reaches at `key` (policy
        functions, members of its policy tables)."""
        found = []
        for site_file, targets in list(self._site_targets.items()):
            if key in targets and site_file != key:
                module = self._modules.load(site_file, only_if_site=True)
                if module is not None:
                    for site, reached in reached_elsewhere(self.sites(module), self._internal_errors):
                        here = [t for t in reached if t.module.path == key]
                        if here:
                            found.append((site, here))
        return found

    def forget(self, key: str) -> None:
        """The file at `key` changed (with the lock held): sites elsewhere may resolve into it."""
        self._site_cache.clear()
        self._previous_targets.setdefault(key, set()).update(self._site_targets.get(key, ()))
        if self._indexed:
            self._index_file(key)

    def release(self, key: str) -> None:
        """Free the sites of the module at `key` (with the lock held)."""
        self._site_cache.pop(key, None)

    def refined(self, key: str) -> None:
        """jedi knows more of the callees at `key` now (with the lock held)."""
        self._site_cache.pop(key, None)
        self._previous_targets.setdefault(key, set()).update(self._site_targets.get(key, ()))

    def affected(self, key: str) -> set[str]:
        """The modules the sites at `key` reach, before its latest change and now, and those
        whose sites reach it (with the lock held)."""
        before = self._previous_targets.pop(key, set()) | self._site_targets.get(key, set())
        self._index_file(key)
        after = self._site_targets.get(key, set())
        users = {site for site, targets in self._site_targets.items() if key in targets}
        return before | after | users
