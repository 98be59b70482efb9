"""Which Python a project is written for, and what was skipped for needing a newer one.

jax-lsp parses with the Python it runs on. A project whose `requires-python` allows only newer
Pythons may use syntax this one cannot parse: its syntax errors are not reported (source.py).
The oldest Python a file's project allows is `target-version` from the settings, else the
`requires-python` nearest to the file: pyproject.toml `[project] requires-python`, setup.cfg
`[options] python_requires`, setup.py `python_requires=` (read as text, never run).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from jax_lsp.core.logger import logger
from jax_lsp.core.record import Record

Version = tuple[int, int]
RUNNING: Version = sys.version_info[:2]

log = logger(__name__)

# One clause of a PEP 440 specifier: `>=3.12`, `~=3.12.1`, `==3.12.*`, `<4`...
# Compiled when first used (by re's cache): most checks read no declaration.
_CLAUSE = r"\s*(~=|===|==|!=|<=|>=|<|>)\s*v?(\d+)(?:\.(\d+))?[\w.*+!-]*\s*"
_SETUP_PY = r"""\bpython_requires["']?\s*[=:]\s*[rRuU]?(["'])([^"'\r\n]*)\1"""


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def minimum_python(specifier: str) -> Version | None:
    """The oldest Python X.Y a `requires-python` specifier admits (`>=3.12,<4` -> (3, 12)).

    None when it sets no lower bound or cannot be read. `>3.11` admits 3.11.1, so it is 3.11;
    `!=` exclusions are not followed (`>=3.10,!=3.10.*` is 3.10)."""
    lowest: Version | None = None
    for clause in specifier.split(","):
        match = re.fullmatch(_CLAUSE, clause)
        if match is None:
            if clause.strip():
                return None
            continue
        operator, major, minor = match.group(1), int(match.group(2)), int(match.group(3) or 0)
        if operator in ("~=", "===", "==", ">=", ">"):
            lowest = max(lowest or (0, 0), (major, minor))
    return lowest


class RequiredPython(Record):
    __slots__ = ("version", "origin")
    version: Version
    origin: str  # where it is declared: "requires-python '>=3.12' in /repo/pyproject.toml"

    def __init__(self, version: Version, origin: str) -> None:
        self._assign(version, origin)


class SkippedStatement(Record):
    """A top-level statement left out of the analysis: only a newer Python parses it."""

    __slots__ = ("line", "python", "why")
    line: int  # 0-based, its first line
    python: Version  # the Python that would parse it
    why: str  # "type parameters (PEP 695)", or the project's RequiredPython.origin

    def __init__(self, line: int, python: Version, why: str) -> None:
        self._assign(line, python, why)


# The parsers below are imported when a declaration is read: only when a statement fails to parse.
def _read_pyproject(path: Path) -> str | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    value = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {}).get("requires-python")
    return value if isinstance(value, str) else None


def _read_setup_cfg(path: Path) -> str | None:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(path.read_text(encoding="utf-8"), str(path))
    return parser.get("options", "python_requires", fallback=None)


def _read_setup_py(path: Path) -> str | None:
    match = re.search(_SETUP_PY, path.read_text(encoding="utf-8", errors="replace"))
    return match.group(2) if match else None


_DECLARATIONS = (
    ("pyproject.toml", _read_pyproject),
    ("setup.cfg", _read_setup_cfg),
    ("setup.py", _read_setup_py),
)


def declared_python(folder: Path) -> RequiredPython | None:
    """The `requires-python` declared in `folder`'s pyproject.toml, setup.cfg or setup.py."""
    import configparser

    for name, read in _DECLARATIONS:
        path = folder / name
        try:
            specifier = read(path) if path.is_file() else None
        except (
            OSError,
            UnicodeDecodeError,
            ValueError,
            configparser.Error,
        ) as exc:  # TOMLDecodeError is a ValueError
            log.debug("cannot read %s: %s", path, exc)
            continue
        version = minimum_python(specifier) if specifier else None
        if specifier and version is not None:
            return RequiredPython(version, f"requires-python {specifier.strip()!r} in {path}")
    return None


# Per declaration file: (mtime, size), or None when it is absent.
_Stamp = tuple[tuple[int, int] | None, ...]


def _stamp(folder: Path) -> _Stamp:
    stamps: list[tuple[int, int] | None] = []
    for name, _ in _DECLARATIONS:
        try:
            stat = os.stat(folder / name)
            stamps.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


class ProjectPythons:
    """Per workspace: the Python each file's project requires, and the statements skipped for
    needing a newer Python than the running one (logged once per file)."""

    def __init__(
        self,
        roots: Iterable[Path] = (),
        target_version: Version | None = None,
        on_read: Callable[[str], None] = lambda path: None,
    ) -> None:
        """`on_read` is told each file a search looks at (present or not): the analysis depends on it."""
        self._roots = [Path(os.path.abspath(root)) for root in roots]
        self._target = target_version
        self._on_read = on_read
        self._declared: dict[
            Path, tuple[_Stamp, RequiredPython | None]
        ] = {}  # per folder, with its files' stamps
        self.skipped: dict[str, tuple[SkippedStatement, ...]] = {}  # path -> statements left out
        self._logged: set[str] = set()

    def required(self, path: str) -> RequiredPython | None:
        """`target-version`, else the nearest declaration from the file's folder up to its root.

        Asked only when a statement fails to parse, so the files' stamps are checked each time."""
        if self._target is not None:
            return RequiredPython(self._target, f"target-version 'py{self._target[0]}{self._target[1]}'")
        folder = Path(os.path.abspath(path)).parent
        root = max(
            (r for r in self._roots if folder.is_relative_to(r)), key=lambda r: len(r.parts), default=None
        )
        for current in (folder, *folder.parents):
            for name, _ in _DECLARATIONS:
                self._on_read(str(current / name))
            stamp = _stamp(current)
            cached = self._declared.get(current)
            if cached is None or cached[0] != stamp:
                cached = self._declared[current] = (stamp, declared_python(current))
            if cached[1] is not None or current == root:
                return cached[1]
        return None

    def record(self, path: str, skipped: Iterable[SkippedStatement]) -> None:
        """Keep what `path` skipped (for a summary) and log it the first time it skips any."""
        skipped = tuple(skipped)
        if not skipped:
            self.skipped.pop(path, None)
            return
        self.skipped[path] = skipped
        if path not in self._logged:
            self._logged.add(path)
            where = "; ".join(f"line {s.line + 1}: {s.why}" for s in skipped)
            log.info("%s: %s (%s)", path, _not_checked(skipped, "jax-lsp runs on"), where)

    def summary(self, paths: Iterable[str] | None = None) -> str | None:
        """One line on all the statements skipped (in `paths`), or None if none were."""
        chosen = [self.skipped[p] for p in (self.skipped if paths is None else paths) if p in self.skipped]
        if not chosen:
            return None
        skipped = [s for per_file in chosen for s in per_file]
        files = f"{len(chosen)} file{'' if len(chosen) == 1 else 's'}"
        newest = format_version(max(s.python for s in skipped))
        return (
            f"{_not_checked(skipped, 'this is', files)} (run jax-lsp under Python >= {newest} to check them)"
        )


def _not_checked(skipped: Sequence[SkippedStatement], running: str, files: str = "") -> str:
    """E.g. "2 statements were not checked: they need Python 3.12 and {running} Python 3.11"."""
    one = len(skipped) == 1
    count = f"{len(skipped)} statement{'' if one else 's'}" + (f" in {files}" if files else "")
    newest = format_version(max(s.python for s in skipped))
    was, they = ("was", "it needs") if one else ("were", "they need")
    return f"{count} {was} not checked: {they} Python {newest} and {running} Python {format_version(RUNNING)}"
