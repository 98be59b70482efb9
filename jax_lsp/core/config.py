"""Which rules run, and where: ``[tool.jax-lsp]`` in pyproject.toml, CLI flags, editor settings."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from jax_lsp.core.findings import Severity
from jax_lsp.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NEW_REMAT_MODES = ("detect", "always")
# What a finding's severity may be set to.
_FINDING_SEVERITIES = {s.value: s for s in (Severity.ERROR, Severity.WARNING)}


class Settings(Record):
    __slots__ = (
        "select",
        "ignore",
        "exclude",
        "src",
        "severity",
        "target_version",
        "jedi_budget",
        "new_remat",
        "examples",
        "compile_target",
    )
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    exclude: tuple[str, ...]
    src: tuple[str, ...]  # folders imports are found in, relative to the project root (ruff's `src`)
    severity: Mapping[str, Severity]
    # The oldest Python the code is for (ruff's `target-version`); None: its `requires-python`.
    target_version: tuple[int, int] | None
    # Seconds jedi may spend on one file's callees that its imports cannot name; 0: no jedi.
    jedi_budget: float
    # JAX's new remat (`jax_remat3`): "detect" where the project turns it on, or "always" (a
    # project preparing for the switch has every callable policy reported).
    new_remat: str
    # `jax-lsp advise`: example specs (MODULE:FUNCTION) by site ("model.py:12"), by the function or
    # class holding it ("model.py:Block.__call__", "model.py:Block") or by file ("model.py"),
    # paths relative to the project root (trace/advisor/examples.py).
    examples: Mapping[str, str]
    # `jax-lsp advise --compile`: the machine to compile for (`target`: "v5e-1", "v5e:2x2", "cpu";
    # read by jax_lsp.trace.compile_target); None: the local TPU's type where there is one.
    compile_target: str | None

    def __init__(
        self,
        select: tuple[str, ...] = ("JAX",),
        ignore: tuple[str, ...] = (),
        exclude: tuple[str, ...] = (),
        src: tuple[str, ...] = (),
        severity: Mapping[str, Severity] | None = None,  # None: a new empty dict
        target_version: tuple[int, int] | None = None,
        jedi_budget: float = 1.0,
        new_remat: str = "detect",
        examples: Mapping[str, str] | None = None,  # None: a new empty dict
        compile_target: str | None = None,
    ) -> None:
        severity = {} if severity is None else severity
        examples = {} if examples is None else examples
        self._assign(
            select,
            ignore,
            exclude,
            src,
            severity,
            target_version,
            jedi_budget,
            new_remat,
            examples,
            compile_target,
        )

    def enabled(self, code: str) -> bool:
        """Ruff's rule: the longest matching prefix wins; on a tie, ignore wins."""
        selected = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        ignored = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return selected >= 0 and selected > ignored

    def severity_of(self, code: str, default: Severity) -> Severity:
        return self.severity.get(code, default)

    def merged(self, **changes: Any) -> Settings:
        return self.replace(**{k: v for k, v in changes.items() if v is not None})


class SettingsError(ValueError):
    pass


def _codes(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"`{key}` must be a list of rule codes or prefixes, got {value!r}")
    bad = [v for v in value if not v.startswith("JAX") and v not in ("ALL",)]
    if bad:
        raise SettingsError(f"`{key}` has unknown codes {bad!r}: codes start with JAX")
    return tuple("JAX" if v == "ALL" else v.strip() for v in value)


def _target_version(value: Any) -> tuple[int, int]:
    match = re.fullmatch(r"py(3)(\d+)", value.strip().lower()) if isinstance(value, str) else None
    if match is None:
        raise SettingsError(f'`target-version` must be like "py312", got {value!r}')
    return int(match.group(1)), int(match.group(2))


def settings_from_mapping(data: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """Validate a settings table (pyproject or editor). Raises SettingsError with a readable message."""
    settings = base or Settings()
    if not isinstance(data, Mapping):
        raise SettingsError(f"settings must be a table, got {type(data).__name__}")
    changes: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("select", "ignore"):
            changes[key] = _codes(value, key)
        elif key == "extend-select":
            changes["select"] = settings.select + _codes(value, key)
        elif key == "extend-ignore":
            changes["ignore"] = settings.ignore + _codes(value, key)
        elif key in ("exclude", "src"):
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                what = "glob patterns" if key == "exclude" else "folders"
                raise SettingsError(f"`{key}` must be a list of {what}, got {value!r}")
            changes[key] = tuple(value)
        elif key == "severity":
            if not isinstance(value, Mapping):
                raise SettingsError(f"`severity` must map codes to 'error' or 'warning', got {value!r}")
            severities = dict(settings.severity)
            for code, level in value.items():
                try:
                    severities[str(code)] = _FINDING_SEVERITIES[str(level).lower()]
                except KeyError:
                    raise SettingsError(
                        f"`severity.{code}` must be 'error' or 'warning', got {level!r}"
                    ) from None
            changes["severity"] = severities
        elif key == "target-version":
            changes["target_version"] = _target_version(value)
        elif key == "jedi-budget":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise SettingsError(f"`jedi-budget` must be a number of seconds >= 0, got {value!r}")
            changes["jedi_budget"] = float(value)
        elif key == "new-remat":
            if value not in NEW_REMAT_MODES:
                raise SettingsError(f"`new-remat` must be one of {', '.join(NEW_REMAT_MODES)}, got {value!r}")
            changes["new_remat"] = value
        elif key == "examples":
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) and ":" in v for k, v in value.items()
            ):
                raise SettingsError(
                    f'`examples` must map "file.py", "file.py:LINE" or "file.py:Class.function" to '
                    f'"MODULE:FUNCTION", got {value!r}'
                )
            changes["examples"] = dict(value)
        elif key == "target":
            if not isinstance(value, str) or not value.strip():
                raise SettingsError(
                    f'`target` must name a machine, e.g. "v5e-1", "v5e:2x2" or "cpu", got {value!r}'
                )
            changes["compile_target"] = value.strip()
        # Unknown keys belong to other layers (the editor's interpreter, trace options): ignored here.
    return settings.replace(**changes)


def _tomllib() -> ModuleType:
    """The TOML parser, imported when a file is to be parsed (start-up time of `jax-lsp check`)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    parser: ModuleType = tomllib  # tomli is untyped
    return parser


def _could_name_jax_lsp(toml: str) -> bool:
    """False when no key of the TOML text can be "jax-lsp": the name is not written out, and no
    escape could spell it (only \\u and \\U spell letters)."""
    return "jax-lsp" in toml or "\\u" in toml or "\\U" in toml


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.jax-lsp] table."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
                if not _could_name_jax_lsp(text):
                    continue
                data = _tomllib().loads(text)
            except (OSError, UnicodeDecodeError, _tomllib().TOMLDecodeError):
                continue
            if "jax-lsp" in data.get("tool", {}):
                return candidate
    return None


def load_pyproject(path: Path, base: Settings | None = None) -> Settings:
    """Settings from ``[tool.jax-lsp]`` of ``path``. Raises SettingsError naming the file."""
    try:
        data = _tomllib().loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, _tomllib().TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read: {exc}") from None
    table = data.get("tool", {}).get("jax-lsp", {})
    try:
        return settings_from_mapping(table, base)
    except SettingsError as exc:
        raise SettingsError(f"{path}: [tool.jax-lsp] {exc}") from None
