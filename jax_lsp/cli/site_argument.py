"""What `jax-lsp trace` and `jax-lsp advise` point at, the site: FILE[:LINE[:COLUMN]], and its
project. (The *target* is what `advise --target` compiles for: `trace.compile_target`.)"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

from jax_lsp.cli.output import display_path
from jax_lsp.core import Settings, SettingsError
from jax_lsp.core.config import find_pyproject, load_pyproject
from jax_lsp.core.record import Record
from jax_lsp.engine import Workspace
from jax_lsp.engine.project import project_root
from jax_lsp.trace.locations import PolicyAnchor, policy_anchors

METAVAR = "FILE[:LINE[:COLUMN]]"
_SITE = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::(?P<column>\d+))?$")


def add_site_argument(parser: argparse.ArgumentParser, places: str) -> None:
    """The FILE[:LINE[:COLUMN]] argument of `trace` and `advise`; ``places``: what its line may
    name."""
    parser.add_argument("site", metavar=METAVAR, help=f"1-based line (and column) of {places}")


class CommandError(Exception):
    """Why the command cannot start; its message is the command's error line."""


class SiteArgument(Record):
    """The command line's file, and the line and column it names (1-based there)."""

    __slots__ = ("path", "line", "column")
    path: Path  # resolved, an existing file
    line: int | None  # 1-based; None: every policy site of the file
    column: int | None  # 0-based, as the agent takes it

    def __init__(self, path: Path, line: int | None, column: int | None) -> None:
        self._assign(path, line, column)

    @classmethod
    def parse(cls, text: str) -> SiteArgument:
        match = _SITE.match(text)
        if match is None:
            raise CommandError(f"{text!r}: expected {METAVAR}")
        path = Path(match["path"]).resolve()
        if not path.is_file():
            raise CommandError(f"{match['path']}: no such file")
        line = int(match["line"]) if match["line"] else None
        column = int(match["column"]) - 1 if line is not None and match["column"] else None
        return cls(path, line, column)

    def positions(
        self,
        workspace: Workspace,
        verb: str,
        sites: Callable[[Workspace, str], list[PolicyAnchor]] | None = None,
        site_of_line: Callable[[Workspace, str, int], PolicyAnchor | None] | None = None,
    ) -> list[tuple[int, int | None]]:
        """(1-based line, 0-based column) of the position named (a line alone: with the column of
        the one site of ``sites`` there, if given, else of the site ``site_of_line`` finds for it,
        given a 0-based line), else of every site of the file that ``sites`` lists (default: its
        ``policy=`` sites); ``verb`` says what the command would have done with none."""
        if self.line is not None:
            if self.column is None and sites is not None:
                columns = [a.column for a in sites(workspace, str(self.path)) if a.line == self.line]
                if len(columns) == 1:
                    return [(self.line, columns[0])]
                spanning = site_of_line(workspace, str(self.path), self.line - 1) if site_of_line else None
                if not columns and spanning is not None:
                    return [(spanning.line, spanning.column)]
            return [(self.line, self.column)]
        found: list[tuple[int, int | None]] = [
            (a.line, a.column) for a in (sites or _policy_sites)(workspace, str(self.path))
        ]
        if not found:
            raise CommandError(f"{display_path(str(self.path))}: no policy site to {verb}")
        return found


def _policy_sites(workspace: Workspace, path: str) -> list[PolicyAnchor]:
    return [a for a in policy_anchors(workspace, path) if a.kind == "site"]


class Project(Record):
    """The site's project: its root, the nearest pyproject.toml and a workspace under its settings."""

    __slots__ = ("root", "pyproject", "workspace")
    root: Path  # resolved: put on sys.path for the project's imports
    pyproject: Path | None
    workspace: Workspace

    def __init__(self, root: Path, pyproject: Path | None, workspace: Workspace) -> None:
        self._assign(root, pyproject, workspace)

    @classmethod
    def open(cls, path: Path, root: Path | None, cwd: Path | None = None) -> Project:
        """The project of ``path``: ``root`` as given (`--root`), else the one found from the file;
        with ``cwd`` (the folder the user runs from), the root as `repository_root` finds it."""
        found = repository_root(path, cwd) if cwd is not None else project_root(path)
        root = (root or found).resolve()
        pyproject = find_pyproject(path)
        try:
            settings = load_pyproject(pyproject) if pyproject else Settings()
        except SettingsError as exc:
            raise CommandError(str(exc)) from None
        return cls(root, pyproject, Workspace(roots=[root], settings=settings))

    @property
    def settings(self) -> Settings:
        return self.workspace.settings


def repository_root(path: Path, cwd: Path) -> Path:
    """The root of the project holding ``path`` as its user means it: the nearest folder with a
    pyproject.toml or ``.git`` (the top of a repository without pyproject.toml), else the folder
    the user runs from (``cwd``) when it holds the file, else `project_root`'s (a setup.py or
    setup.cfg, else the folder above the outermost package)."""
    path, cwd = path.resolve(), cwd.resolve()
    for folder in path.parents:
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return cwd if path.is_relative_to(cwd) else project_root(path)
