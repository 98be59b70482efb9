"""A set of root folders, the open buffers over them, and the policy sites they hold.

The workspace holds its parts and keeps them consistent when a file changes; each part lives in
a module of its own:

- `project_files.ProjectFiles`: the open buffers over the disk, the Python files under the roots,
  the record of which files an analysis read;
- `module_cache.ModuleCache`: each file parsed once into a module, until it changes;
- `callee_names.CalleeNames`: jedi, for the callees a file's imports cannot name;
- `site_index.SiteIndex`: the modules' policy sites, and which modules their policies live in;
- `answers.FileAnswers`: a file's findings, the policy at a position;
- `project_facts.ProjectFacts`: the JAX release, its facts, the new-remat switch;
- the checkpoint names in reach (`core.tags.index.NameIndex`, built on first use).

All share one lock, the workspace's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Finding, InternalError
from jax_lsp.core.guard import WorkLock
from jax_lsp.core.text.python_versions import ProjectPythons
from jax_lsp.engine.answers import FileAnswers
from jax_lsp.engine.callee_names import CalleeNames
from jax_lsp.engine.imports import ImportResolver
from jax_lsp.engine.jedi_names import JediNames
from jax_lsp.engine.module_cache import ModuleCache
from jax_lsp.engine.project_facts import ProjectFacts
from jax_lsp.engine.project_files import ProjectFiles, path_key
from jax_lsp.engine.selection import admitted
from jax_lsp.engine.site_index import SiteIndex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.jax_facts import JaxFacts
    from jax_lsp.core.policies.describe import PolicyDescription
    from jax_lsp.core.policies.new_remat import NewRematSwitch
    from jax_lsp.core.policies.resolve import ResolvedPolicy
    from jax_lsp.core.policies.sites import Site
    from jax_lsp.core.tags.index import NameIndex
    from jax_lsp.rules import Project

    T = TypeVar("T")


# The tags index and the rules' view of the project are imported when first asked for: a check
# whose results all come from the cache asks neither, and one of a file asks no tag.
def _name_index(workspace: Workspace) -> NameIndex:
    from jax_lsp.core.tags.index import NameIndex

    return NameIndex(workspace)


def _project(workspace: Workspace) -> Project:
    from jax_lsp.rules import Project

    return Project(workspace.checkpoint_names, workspace.jax_facts, workspace.new_remat_switch)


class Workspace:
    """The parts above, built together; the workspace keeps them consistent when a file changes
    (`_forget`) and answers for them."""

    def __init__(
        self,
        roots: Iterable[Path] = (),
        settings: Settings | None = None,
        interpreter: str | None = None,
        jedi_in_background: bool = False,
        findings_only: bool = False,
    ):
        """`findings_only`: the sites serve findings alone (a `check` that traces nothing), so a
        callee only jedi could name is asked about only where its call could give a finding."""
        self.roots = [Path(path_key(r)) for r in roots]
        self.settings = settings or Settings()
        self.interpreter = interpreter
        self._lock = WorkLock()  # an RLock that deep() workers share with their caller
        self.internal_errors: list[InternalError] = []
        self.files = ProjectFiles(self.roots, self.settings, self._lock)
        # requires-python per file, and the statements skipped for needing a newer Python
        self.pythons = ProjectPythons(self.roots, self.settings.target_version, self.files.read_by_analysis)
        self.imports = ImportResolver(self.roots, self.settings.src, self.files.is_open)
        # Inline (CLI): jedi is asked while sites are found. In the background (server): finding
        # sites only notes the callees for jedi, and refine_with_jedi() asks it off the lock.
        self.jedi = JediNames(
            self.roots[0] if self.roots else None, interpreter, self.settings.jedi_budget, jedi_in_background
        )
        self.jedi.depends = self.files.note_reads  # an answer depends on what jedi read for it
        self.callees = CalleeNames(self.jedi, self._lock, self.files, self.imports, interpreter)
        self.modules = ModuleCache(
            self._lock, self.files, self.imports, self.pythons, self.callees, self.internal_errors
        )
        self.site_index = SiteIndex(
            self._lock,
            self.roots,
            self.settings,
            self.modules,
            self.imports,
            self.internal_errors,
            findings_only,
        )
        self.answers = FileAnswers(
            self._lock, self.settings, self.modules, self.site_index, self.project, self.internal_errors
        )
        self.facts = ProjectFacts(self._lock, self.settings, interpreter, self.files, self.modules.load)
        self._names: NameIndex | None = None

    def take_internal_errors(self) -> list[InternalError]:
        """The analysis bugs met since the last call (each cost one site, policy or file)."""
        with self._lock:
            errors = list(self.internal_errors)
            self.internal_errors.clear()  # the list every part adds to
            return errors

    # Buffers and disk --------------------------------------------------------
    def set_document(self, path: Path | str, text: str) -> None:
        key = path_key(path)
        with self._lock:
            # A buffer opened may be a module no file on disk is yet; an edit moves no module.
            opened = not self.files.is_open(key)
            self.files.open(key, text)
            self._forget(key, modules_moved=opened)

    def close_document(self, path: Path | str) -> None:
        with self._lock:
            self.files.close(path_key(path))
            self.modules.close_buffer(path_key(path))
            self._forget(path_key(path))

    def file_changed(self, path: Path | str) -> None:
        with self._lock:
            self._forget(path_key(path))
            self.callees.file_changed(path_key(path))

    def _forget(self, key: str, modules_moved: bool = True) -> None:
        self.modules.forget(key)
        if modules_moved:
            self.imports.forget()
        self.callees.forget(key)
        self.site_index.forget(key)
        if self._names is not None:
            self._names.invalidate(key)
        self.facts.forget(key)

    def buffers(self) -> dict[str, str]:
        """The open buffers' texts, by path."""
        return self.files.buffers()

    def buffer(self, path: Path | str) -> str | None:
        """The open buffer's text at `path`, or None if none is open there."""
        return self.files.buffer(path)

    def read(self, path: Path | str) -> bytes | None:
        """A module's current content: its open buffer (as UTF-8), else the file on disk."""
        return self.files.read(path)

    def admitted(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings of another producer than the rules (the trace) that the user sees:
        `selection.admitted` under this workspace's settings, each file's lines as the workspace
        holds them (an open buffer over the disk)."""
        from jax_lsp.core.text.decoding import decode, split_lines  # here: read only for the trace

        texts: dict[str, list[str]] = {}

        def line_text(path: str, line: int) -> str:
            if path not in texts:
                data = self.read(path)
                texts[path] = split_lines(decode(data)[0]) if data is not None else []
            lines = texts[path]
            return lines[line].rstrip("\r\n") if 0 <= line < len(lines) else ""

        return admitted(findings, self.settings, line_text)

    def python_files(self) -> list[str]:
        """Every Python file under the roots, and the open buffers outside them."""
        return self.files.python_files()

    def unchanging(self) -> contextlib.AbstractContextManager[None]:
        """A block in which no file under the roots changes (a batch run; ProjectFiles.unchanging)."""
        return self.files.unchanging()

    def in_roots(self, path: Path | str) -> bool:
        return self.imports.root_of(Path(path_key(path))) is not None

    # What an analysis read ---------------------------------------------------
    def recording_loads(self) -> contextlib.AbstractContextManager[set[str]]:
        """The paths of the files an analysis inside the block depended on (ProjectFiles.recording_loads)."""
        return self.files.recording_loads()

    def note_reads(self, paths: Iterable[str]) -> None:
        """An analysis depends on these files too, though it did not load them as modules."""
        self.files.note_reads(paths)

    def depends_on_every_file(self) -> None:
        """`note_reads` of every file of the project, where an analysis is recorded."""
        self.files.depends_on_every_file()

    @contextlib.contextmanager
    def aside(self, work: Callable[[], T]) -> Iterator[Callable[[], T]]:
        """`work()` (its answer plain data) done by a forked process while this one goes on, where
        engine.forked can fork; the function given waits for its answer. Leaving the block stops
        a process whose answer was not taken."""
        from jax_lsp.engine.forked import InChild  # here: most runs set nothing aside

        with InChild(lambda: [work()]) as child:

            def answer() -> T:
                (made,) = child.items()
                return made

            yield answer

    # Modules -----------------------------------------------------------------
    def load(self, path: Path | str, only_if_site: bool = False, partially: bool = False) -> Module | None:
        """The parsed module at `path` (ModuleCache.load)."""
        return self.modules.load(path, only_if_site, partially)

    def loaded(self, path: Path | str) -> Module | None:
        """The module at `path` as last loaded, without loading it (ModuleCache.loaded)."""
        return self.modules.loaded(path)

    def release(self, path: Path | str) -> None:
        """Free a module's tree and sites (a batch check is done with it); it loads again if asked."""
        with self._lock:
            self.modules.forget(path_key(path))
            self.site_index.release(path_key(path))

    def refine_with_jedi(self, path: Path | str, text: str) -> bool:
        """Background mode: ask jedi about the callees that finding the sites of `path` (as
        `text`) left to it. jedi runs without the lock. True when `path` should be checked again."""
        key = path_key(path)
        if not self.jedi.refine(key, text):
            return False
        with self._lock:
            self.site_index.refined(key)
        return True

    # Sites -------------------------------------------------------------------
    def sites(self, module: Module) -> list[tuple[Site, list[ResolvedPolicy]]]:
        """The module's policy sites, each with the definitions its policy reaches."""
        return self.site_index.sites(module)

    def index(
        self,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        """Find the policy sites of every file under the roots (for cross-module findings)."""
        self.site_index.index(progress, cancelled)

    def index_users(self, paths: Iterable[Path | str], jobs: int = 1) -> None:
        """Index only the files that could use a policy defined in `paths` (SiteIndex.index_users)."""
        self.site_index.index_users(paths, jobs)

    def users_of(self, paths: Iterable[Path | str], jobs: int = 1) -> Iterator[Path]:
        """The files that could use a policy defined in `paths` (SiteIndex.users_of)."""
        return self.site_index.users_of(paths, jobs)

    # Answers -----------------------------------------------------------------
    def check_file(self, path: Path | str) -> list[Finding]:
        return self.answers.check_file(path)

    def describe_policy(self, path: Path | str, line: int, column: int) -> PolicyDescription | None:
        """The policy (site value or `def`) at a 0-based line and code-point column, for hover."""
        return self.answers.describe_policy(path, line, column)

    def affected_files(self, path: Path | str) -> set[Path]:
        """Other files whose findings may change when `path` changes."""
        key = path_key(path)
        with self._lock:
            affected = self.site_index.affected(key)
            naming = self._names.affected_by(key) if self._names is not None else set()
        return {Path(p) for p in (affected | naming) if p != key}

    # What rules know of the project -------------------------------------------
    def project(self) -> Project:
        return _project(self)

    def jax_version(self) -> str | None:
        """The JAX release installed for the project (the interpreter's), from its metadata."""
        return self.facts.jax_version()

    def jax_facts(self) -> JaxFacts:
        """The facts of the JAX release installed for the project (the newest when none is)."""
        return self.facts.jax_facts()

    def new_remat_switch(self) -> NewRematSwitch | None:
        """Where the project turns on JAX's new remat (ProjectFacts.new_remat_switch)."""
        return self.facts.new_remat_switch()

    def checkpoint_names(self) -> NameIndex:
        """The `checkpoint_name` tags in reach and the names policies give (built on first use)."""
        with self._lock:
            if self._names is None:
                self._names = _name_index(self)
            return self._names
