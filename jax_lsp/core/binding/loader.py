"""What a module needs from the workspace to follow names across files: the modules it imports,
what jedi says a callee is, and the Python versions the project is written for."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.text.python_versions import ProjectPythons


class ModuleLoader(Protocol):
    def module(self, name: str, importer: Module) -> Module | None: ...

    def jedi_qualname(self, module: Module, node: ast.expr) -> str | None: ...

    @property
    def pythons(self) -> ProjectPythons: ...
