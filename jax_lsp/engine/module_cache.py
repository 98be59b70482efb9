"""The workspace's parsed modules, one per file, kept until the file changes.

Files that cannot hold a policy site are skipped by a byte search and never parsed; a module
that defines a policy used elsewhere is parsed when a site leads to it.
"""

from __future__ import annotations

from pathlib import Path

from jax_lsp.core.findings import InternalError
from jax_lsp.core.guard import WorkLock, guarded
from jax_lsp.core.notebooks.files import is_notebook, parse_notebook
from jax_lsp.core.packages import read_file
from jax_lsp.core.text.python_versions import ProjectPythons
from jax_lsp.core.text.triggers import could_hold_site
from jax_lsp.engine.callee_names import CalleeNames
from jax_lsp.engine.imports import ImportResolver
from jax_lsp.engine.project_files import ProjectFiles, path_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast

    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.text.deferred import DeferredDefinition
    from jax_lsp.core.text.source import ParseCache, SourceModule


# The parser and the scopes are imported on the first parse: a `jax-lsp check` whose results all
# come from the cache parses nothing, and start-up time is most of such a run.
def _parse(
    key: str, content: str | bytes, pythons: ProjectPythons, caches: dict[str, ParseCache]
) -> SourceModule:
    """A file parsed whole: an open buffer's text (its statements' parses kept in `caches`, for
    its next edit) or a file's bytes."""
    from jax_lsp.core.text.source import ParseCache, parse_bytes, parse_text

    if isinstance(content, bytes):
        return parse_bytes(content, key, pythons)
    return parse_text(content, key, cache=caches.setdefault(key, ParseCache()), pythons=pythons)


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


def _bind(
    source: SourceModule, name: str, is_package: bool, loader: ModuleCache, deferred: list[DeferredDefinition]
) -> Module:
    from jax_lsp.core.binding.module import Module

    return Module(source, name, is_package, loader, deferred)


class ModuleCache:
    """Loads each file as a module once, until it changes (its stamp: the open buffer, else the
    file's time and size), and finds a module by its dotted name: the loader of every module it
    makes. Shares the workspace's lock."""

    def __init__(
        self,
        lock: WorkLock,
        files: ProjectFiles,
        imports: ImportResolver,
        pythons: ProjectPythons,
        callees: CalleeNames,
        internal_errors: list[InternalError],
    ):
        self._lock = lock
        self._files = files
        self._imports = imports
        self.pythons = pythons
        self._callees = callees
        self._internal_errors = internal_errors
        self._modules: dict[str, tuple[object, Module | None]] = {}
        self._for_sites: dict[str, tuple[object, Module | None]] = {}  # parsed only as far as sites need
        self._parse_caches: dict[str, ParseCache] = {}  # per open buffer

    def load(self, path: Path | str, only_if_site: bool = False, partially: bool = False) -> Module | None:
        """The parsed module at `path` (None if unreadable, or if `only_if_site` and it cannot hold one).

        With `only_if_site` or `partially`, a file on disk may come back parsed only as far as its
        sites need (source.parse_for_sites): its deferred definitions are parsed when a name leads
        to them, and a syntax error in one that nothing leads to is never reported. Asked whole
        later, the same module object parses the rest: every analysis sees one module per file."""
        key = path_key(path)
        with self._lock:
            self._files.read_by_analysis(key)
            stamp = self._files.stamp(key)
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
                guarded(whole.parse_deferred, None, self._internal_errors, key, 0, "reading its scopes")
                self.pythons.record(key, whole.source.skipped)
                self._modules[key] = (stamp, whole)
                return whole
            deferred: list[DeferredDefinition] = []
            text = self._files.text(key)
            if text is not None:
                if only_if_site and not could_hold_site(text.encode("utf-8", "surrogatepass")):
                    return None
                source = _parse(key, text, self.pythons, self._parse_caches)
            else:
                data = read_file(key)
                if data is None:
                    self._modules[key] = (stamp, None)
                    return None
                if is_notebook(key):
                    source = parse_notebook(data, key, only_if_site, self.pythons)
                elif not (only_if_site or partially):
                    source = _parse(key, data, self.pythons, self._parse_caches)
                elif partially or could_hold_site(data):
                    partial = _parse_for_sites(data, key)
                    source = (
                        _parse(key, data, self.pythons, self._parse_caches) if partial is None else partial[0]
                    )
                    deferred = [] if partial is None else partial[1]
                else:
                    source = None
                if source is None:
                    return None
            name, is_package = self._imports.module_name(key)
            module = guarded(
                lambda: _bind(source, name, is_package, self, deferred),
                None,
                self._internal_errors,
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

    def loaded(self, path: Path | str) -> Module | None:
        """The module at `path` as last loaded (whole, or as far as its sites need), without
        loading it; None when it was not loaded, or was forgotten since."""
        key = path_key(path)
        with self._lock:
            found = self._for_sites.get(key) or self._modules.get(key)
            return found[1] if found is not None else None

    def module(self, name: str, importer: Module) -> Module | None:
        """Find a module by dotted name where Python would, seen from the importing file."""
        with self._lock:
            found = self._imports.find(name, importer.path)
        return self.load(found, partially=True) if found else None

    def jedi_qualname(self, module: Module, node: ast.expr) -> str | None:
        """What jedi says a callee is, when the file's imports cannot tell (engine.callee_names)."""
        return self._callees.qualname(module, node)

    def forget(self, key: str) -> None:
        """Drop the module at `key` (with the lock held): it loads again when asked."""
        self._modules.pop(key, None)
        self._for_sites.pop(key, None)

    def close_buffer(self, key: str) -> None:
        """The buffer at `key` was closed (with the lock held): its parses are of no more use."""
        self._parse_caches.pop(key, None)
