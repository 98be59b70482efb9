"""A plain `jax-lsp check` command line, read without argparse: importing argparse (gettext and
locale with it) and building its parsers is about a tenth of checking a small project.

The options are those the command's `add_parser` declares, recorded as it declares them: one
declaration serves both readers. A command line this reader cannot take exactly as argparse
would is left to argparse, for its result or its error: an option not written in full
(argparse takes abbreviations), `--option=value`, `--help`, a value starting with `-`, a value
that the option's type or choices refuse, paths on both sides of an option (argparse refuses
the second run)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import SimpleNamespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The commands whose start-up is most of a usual run.
QUICK_COMMANDS = ("check",)


class _Declared:
    """Stands for argparse's subparsers and the command's parser while the command's
    `add_parser` declares its options."""

    def __init__(self) -> None:
        self.arguments: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.defaults: dict[str, Any] = {}

    def add_parser(self, name: str, **kwargs: Any) -> _Declared:
        return self

    def add_argument(self, *flags: str, **kwargs: Any) -> None:
        self.arguments.append((flags, kwargs))

    def set_defaults(self, **kwargs: Any) -> None:
        self.defaults.update(kwargs)


class _Option:
    """One declared option: where it goes, and how its value is read (None: a flag)."""

    def __init__(self, dest: str, kwargs: dict[str, Any]) -> None:
        self.dest = dest
        self.convert: Callable[[str], Any] | None = (
            None if kwargs.get("action") == "store_true" else kwargs.get("type", str)
        )
        self.choices = kwargs.get("choices")


def quick_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """The values argparse would give for `argv` (`COMMAND ARGS...`), or None where this reader
    leaves it to argparse (see the module's docstring)."""
    if not argv or argv[0] not in QUICK_COMMANDS:
        return None
    declared = _Declared()
    importlib.import_module(f"jax_lsp.cli.commands.{argv[0]}").add_parser(declared, "")
    values: dict[str, Any] = {"command": argv[0], **declared.defaults}
    options: dict[str, _Option] = {}
    positional: _Option | None = None
    for flags, kwargs in declared.arguments:
        if kwargs.get("action") not in (None, "store_true") or not _plain_default(kwargs):
            return None
        if not flags[0].startswith("-"):
            if positional is not None or kwargs.get("nargs") != "*" or "default" in kwargs:
                return None
            positional = _Option(flags[0], kwargs)
            values[positional.dest] = []
            continue
        if "nargs" in kwargs or not all(flag.startswith("--") for flag in flags):
            return None
        option = _Option(kwargs.get("dest") or flags[0][2:].replace("-", "_"), kwargs)
        options.update(dict.fromkeys(flags, option))
        values[option.dest] = kwargs.get("default", False if option.convert is None else None)
    return _read(argv[1:], options, positional, values)


def _plain_default(kwargs: dict[str, Any]) -> bool:
    """Whether argparse keeps the default as declared (it converts a string default by `type`)."""
    return not (isinstance(kwargs.get("default"), str) and "type" in kwargs)


def _read(
    tokens: Sequence[str], options: dict[str, _Option], positional: _Option | None, values: dict[str, Any]
) -> SimpleNamespace | None:
    paths_read = False  # argparse reads one run of positionals between options
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if not token.startswith("-"):
            if positional is None or paths_read:
                return None
            run = index
            while index < len(tokens) and not tokens[index].startswith("-"):
                index += 1
            convert = positional.convert or str
            try:
                values[positional.dest] = [convert(path) for path in tokens[run:index]]
            except (TypeError, ValueError):
                return None
            paths_read = True
            continue
        option = options.get(token)
        if option is None:
            return None
        if option.convert is None:
            values[option.dest] = True
            index += 1
            continue
        if index + 1 == len(tokens) or tokens[index + 1].startswith("-"):
            return None
        try:
            value = option.convert(tokens[index + 1])
        except (TypeError, ValueError):
            return None
        if option.choices is not None and value not in option.choices:
            return None
        values[option.dest] = value
        index += 2
    return SimpleNamespace(**values)
