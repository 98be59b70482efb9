"""What a callee is where its file's imports cannot tell: jedi's answer (engine.jedi_names),
asked only where something in reach leads to JAX (engine.jax_reach).
"""

from __future__ import annotations

from jax_lsp.core.guard import WorkLock
from jax_lsp.engine.imports import ImportResolver
from jax_lsp.engine.jedi_names import JediNames
from jax_lsp.engine.project_files import ProjectFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast

    from jax_lsp.core.binding.module import Module
    from jax_lsp.engine.jax_reach import JaxReach


# The reach is imported when a callee is first asked about: a check whose results all come from
# the cache asks about none, and the module imports `ast` (start-up time).
def _jax_reach() -> type[JaxReach]:
    from jax_lsp.engine.jax_reach import JaxReach

    return JaxReach


class CalleeNames:
    """jedi (`jedi`, shared with the result cache and the server) and, built on first use, the
    reach that tells where asking it is of no use. Shares the workspace's lock."""

    def __init__(
        self,
        jedi: JediNames,
        lock: WorkLock,
        files: ProjectFiles,
        imports: ImportResolver,
        interpreter: str | None,
    ):
        self.jedi = jedi
        self._lock = lock
        self._files = files
        self._imports = imports
        self._interpreter = interpreter
        self._reach: JaxReach | None = None

    @property
    def reach(self) -> JaxReach:
        """Whether jedi could name a callee a checkpoint function at all."""
        with self._lock:
            if self._reach is None:
                self._reach = _jax_reach()(
                    self._files.read,
                    lambda importer: [str(folder) for folder in self._imports.folders(importer)],
                    self._files.is_open,
                    self._files.python_files,
                    self._imports.module_name,
                    self._interpreter,
                )
            return self._reach

    def qualname(self, module: Module, node: ast.expr) -> str | None:
        """What jedi says a callee is (see jedi_names); not asked where nothing in reach leads to
        JAX (see jax_reach)."""
        if self.jedi.budget > 0 and not self.reach.jedi_could_name(module, node):
            self.jedi.not_needed(module.path)
            return None
        return self.jedi.qualname(module, node)

    def forget(self, key: str) -> None:
        """The file at `key` changed (with the lock held)."""
        if self._reach is not None:
            self._reach.forget(key)

    def file_changed(self, key: str) -> None:
        """The file at `key` changed, appeared or vanished on disk (with the lock held)."""
        self.jedi.file_changed(key)
        if self._reach is not None:
            self._reach.forget(None)  # a new or deleted file changes what imports resolve to
