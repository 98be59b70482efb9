"""The server's settings: `[tool.jax-lsp]`, then the editor's `jax-lsp` section on top.

Every key is validated on its own: an invalid value falls back to its default and is
named in one message, the valid keys still apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jax_lsp.core.config import (
    Settings,
    SettingsError,
    find_pyproject,
    load_pyproject,
    settings_from_mapping,
)
from jax_lsp.trace.options import TraceOptions

CORE_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "extend-ignore",
    "exclude",
    "src",
    "severity",
    "target-version",
)
NOTIFICATIONS = ("off", "onError", "always")
LOG_LEVELS = ("error", "warning", "info", "debug")


@dataclass(frozen=True)
class TraceSettings:
    on_save: bool = False
    options: TraceOptions = field(default_factory=TraceOptions)  # of every trace and advice


@dataclass(frozen=True)
class AdviseOptions:
    on_save: bool = False
    budget: int | None = None  # bytes; None: the current policy's estimated peak
    # What to compile for (docs/accelerators.md): "v5e-8", "v5e:2x4", "cpu"; None: the project's
    # [tool.jax-lsp] target, else this machine's TPU, else cpu.
    target: str | None = None


@dataclass(frozen=True)
class ServerSettings:
    core: Settings = field(default_factory=Settings)
    # The python that jedi resolves imports with and the trace runs in; None: the server's own.
    interpreter: str | None = None
    trace: TraceSettings = field(default_factory=TraceSettings)
    advise: AdviseOptions = field(default_factory=AdviseOptions)
    show_notifications: str = "onError"
    log_level: str = "info"
    trusted: bool = True
    pyproject: Path | None = None


def _number(value: Any, key: str, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise SettingsError(f"`{key}` must be a number >= {minimum}, got {value!r}")
    return value


def _choice(value: Any, key: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise SettingsError(f"`{key}` must be one of {', '.join(choices)}, got {value!r}")
    return value


def _trace(value: Any, problems: list[str]) -> TraceSettings:
    """Each trace option on its own: a bad timeout keeps a good onSave."""
    if not isinstance(value, Mapping):
        raise SettingsError(f"`trace` must be an object, got {value!r}")
    checks = {
        "onSave": ("on_save", lambda v: _boolean(v, "trace.onSave")),
        "timeout": ("timeout", lambda v: _number(v, "trace.timeout", 0.1)),
        "memoryLimitMb": ("memory_mb", lambda v: int(_number(v, "trace.memoryLimitMb", 64))),
    }
    found: dict[str, Any] = {}
    for key, (name, check) in checks.items():
        if key in value:
            try:
                found[name] = check(value[key])
            except SettingsError as exc:
                problems.append(str(exc))
    limits = {name: found.pop(name) for name in ("timeout", "memory_mb") if name in found}
    return TraceSettings(**found, options=TraceOptions().replace(**limits))


def _advise(value: Any) -> AdviseOptions:
    """`advise.onSave` (bool), `advise.budget` ("24GiB", "600000B") and `advise.target` ("v5e-8")."""
    if not isinstance(value, Mapping):
        raise SettingsError(f"`advise` must be an object, got {value!r}")
    on_save = _boolean(value.get("onSave", False), "advise.onSave")
    budget = value.get("budget")
    if budget is not None:
        from jax_lsp.trace.advisor.sizes import parse_size  # only when a budget is set

        try:
            budget = parse_size(str(budget))
        except ValueError as exc:
            raise SettingsError(f"`advise.budget`: {exc}") from None
    target = value.get("target")
    if target is not None:
        from jax_lsp.trace.compile_target import CompileTargetError, parse_target  # only when one is set

        try:
            parse_target(str(target))
        except CompileTargetError as exc:
            raise SettingsError(f"`advise.target`: {exc}") from None
        target = str(target)
    return AdviseOptions(on_save=on_save, budget=budget, target=target)


def _boolean(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"`{key}` must be true or false, got {value!r}")
    return value


def _interpreter(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise SettingsError(f"`interpreter` must be a path to a python executable, got {value!r}")
    return value


def _pyproject_settings(roots: Sequence[Path]) -> tuple[Settings, Path | None, list[str]]:
    for root in roots:
        path = find_pyproject(root)
        if path is not None:
            try:
                return load_pyproject(path), path, []
            except SettingsError as exc:
                return Settings(), path, [str(exc)]
    return Settings(), None, []


def resolve(editor: Any, roots: Sequence[Path], trusted: bool = True) -> tuple[ServerSettings, list[str]]:
    """The settings to use and the problems found (empty when all is well)."""
    core, pyproject, problems = _pyproject_settings(roots)
    values: dict[str, Any] = {"trusted": trusted, "pyproject": pyproject}
    if editor is None or editor == []:  # Lua's empty table `{}` reaches us as a JSON `[]`
        editor = {}
    editor = (
        {
            key: {} if value == [] and key in ("severity", "trace", "advise") else value
            for key, value in editor.items()
        }
        if isinstance(editor, Mapping)
        else editor
    )
    if not isinstance(editor, Mapping):
        problems.append(f"settings must be an object, got {editor!r}")
        editor = {}
    for key, value in editor.items():
        try:
            if key in CORE_KEYS:
                core = settings_from_mapping({key: value}, base=core)
            elif key == "jediBudget":  # `jedi-budget` of [tool.jax-lsp]
                core = core.merged(jedi_budget=float(_number(value, key, 0)))
            elif key == "newRemat":  # `new-remat` of [tool.jax-lsp]
                core = settings_from_mapping({"new-remat": value}, base=core)
            elif key == "interpreter":
                values["interpreter"] = _interpreter(value)
            elif key == "trace":
                values["trace"] = _trace(value, problems)
            elif key == "advise":
                values["advise"] = _advise(value)
            elif key == "showNotifications":
                values["show_notifications"] = _choice(value, key, NOTIFICATIONS)
            elif key == "logLevel":
                values["log_level"] = _choice(value, key, LOG_LEVELS)
        except SettingsError as exc:
            problems.append(str(exc))
    return ServerSettings(core=core, **values), problems
