"""Which files could use the policies of a few named modules, found by reading import
statements as text: pre-commit names only the changed files, and their findings may come from
sites in files it does not name. No file is parsed here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jax_lsp.core.file_triggers import could_hold_site

# `from SOURCE import NAMES`, NAMES in parentheses over several lines or continued with `\`.
_FROM_IMPORT = re.compile(
    rb"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*(?:\\\n[^\n]*)*)", re.M
)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([^\n]*)", re.M)
_NAME = re.compile(rb"\*|[^\W\d]\w*")


@dataclass(frozen=True)
class Exported:
    """A module whose names a user could import: its dotted name, its file, the names it binds."""

    name: str
    path: Path
    names: frozenset[str]


def _imported(names: bytes) -> set[str]:
    return {n.decode("utf-8", "replace") for n in _NAME.findall(names)} - {"as"}


def _is_module(source: str, importer: Path, target: Exported) -> bool:
    """Whether `source`, as written after `from`/`import` in `importer`, names `target`."""
    level = len(source) - len(source.lstrip("."))
    if level:
        folder = importer.parent
        for _ in range(level - 1):
            folder = folder.parent
        rest = [part for part in source[level:].split(".") if part]
        module = folder.joinpath(*rest)
        return target.path in (module.with_suffix(".py"), module / "__init__.py")
    name = target.name
    return bool(source) and (source == name or name.endswith("." + source) or source.endswith("." + name))


def _submodule(source: str, name: str) -> str:
    return f"{source}{name}" if source.endswith(".") else f"{source}.{name}"


def imports_from(data: bytes, importer: Path, targets: list[Exported]) -> set[str]:
    """The names the file at `importer` imports from `targets` (`*` for a star import, the
    module's own name when it imports the module as a whole)."""
    found: set[str] = set()
    for match in _FROM_IMPORT.finditer(data):
        source, imported = match.group(1).decode("utf-8", "replace"), _imported(match.group(2))
        for target in targets:
            last = target.name.rsplit(".", 1)[-1]
            if _is_module(source, importer, target) and (imported & target.names or "*" in imported):
                found |= imported
            elif last in imported and _is_module(_submodule(source, last), importer, target):
                found |= imported
    for match in _IMPORT.finditer(data):
        for part in match.group(1).split(b","):
            words = part.split()
            if words and any(_is_module(words[0].decode("utf-8", "replace"), importer, t) for t in targets):
                found |= _imported(part)
    return found


def candidate_users(
    files: dict[Path, bytes], named: list[Exported], module_name: Callable[[Path], str]
) -> list[Path]:
    """The files that could hold a site and import something of the `named` modules, directly
    or through a package that re-exports it (`from pkg.policies import p as chosen` in
    pkg/__init__.py)."""
    targets = list(named)
    packages = [path for path in files if path.name == "__init__.py"]
    while True:
        exporters = [
            Exported("", path, frozenset(names))
            for path in packages
            if path not in {t.path for t in targets} and (names := imports_from(files[path], path, targets))
        ]
        if not exporters:
            break
        targets += [Exported(module_name(e.path), e.path, e.names) for e in exporters]
    return [
        path for path, data in files.items() if could_hold_site(data) and imports_from(data, path, targets)
    ]
