"""What the workspace answers about one file: its findings (a check) and the policy at a
position in it (a hover).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Finding, InternalError, Position
from jax_lsp.core.guard import WorkLock, deep
from jax_lsp.engine.module_cache import ModuleCache
from jax_lsp.engine.project_files import path_key
from jax_lsp.engine.site_index import SiteIndex, policy_function

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast

    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.policies.describe import PolicyDescription
    from jax_lsp.core.policies.resolve import PolicyFunction, ResolvedPolicy
    from jax_lsp.core.policies.sites import Site
    from jax_lsp.rules import Project


# The analysis is imported where a file is first checked: a `jax-lsp check` whose results all
# come from the cache checks none, and start-up time is most of such a run.
def _check_module(
    module: Module,
    sites: list[tuple[Site, list[ResolvedPolicy]]],
    foreign: Iterable[tuple[Site, list[ResolvedPolicy]]],
    settings: Settings,
    errors: list[InternalError],
    project: Project,
) -> list[Finding]:
    from jax_lsp.engine.analysis import check_module

    return check_module(module, sites, foreign, settings, errors, project)


# Hover's describer is the server's alone: a check never imports it (tests/cli/test_startup.py).
def _describe(
    module: Module,
    here: list[tuple[ast.expr, list[ResolvedPolicy]]],
    functions: list[PolicyFunction],
    position: Position,
) -> PolicyDescription | None:
    from jax_lsp.core.policies.describe import describe_at

    return deep(lambda: describe_at(module, here, functions, position))


class FileAnswers:
    """Answers from a file's module, its sites and the policies other files' sites use from it.
    Shares the workspace's lock."""

    def __init__(
        self,
        lock: WorkLock,
        settings: Settings,
        modules: ModuleCache,
        site_index: SiteIndex,
        project: Callable[[], Project],
        internal_errors: list[InternalError],
    ):
        self._lock = lock
        self._settings = settings
        self._modules = modules
        self._site_index = site_index
        self._project = project
        self._internal_errors = internal_errors

    def check_file(self, path: Path | str) -> list[Finding]:
        """Every finding anchored in `path`, including those in policies its sites do not use."""
        key = path_key(path)
        with self._lock:
            module = self._modules.load(key)
            if module is None:
                return []
            foreign = self._site_index.foreign_targets(key)
            return _check_module(
                module,
                self._site_index.sites(module),
                foreign,
                self._settings,
                self._internal_errors,
                self._project(),
            )

    def describe_policy(self, path: Path | str, line: int, column: int) -> PolicyDescription | None:
        """The policy (site value or `def`) at a 0-based line and code-point column, for hover."""
        key = path_key(path)
        with self._lock:
            module = self._modules.load(key)
            if module is None:
                return None
            function = policy_function()
            sites = self._site_index.sites(module)
            here = [(site.value, targets) for site, targets in sites if site.value is not None]
            functions = [t for _, targets in sites for t in targets if isinstance(t, function)]
            functions = [
                f
                for f in [*functions, *(t for _, ts in self._site_index.foreign_targets(key) for t in ts)]
                if isinstance(f, function) and f.module is module
            ]
            return _describe(module, here, functions, Position(line, column))
