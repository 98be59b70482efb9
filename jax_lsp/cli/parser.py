"""The `jax-lsp` command line as argparse reads it: one subcommand per module in
`jax_lsp.cli.commands`. A plain `jax-lsp check` is read without it (`quick_args`)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from jax_lsp import __version__

# Each module exposes `add_parser(subparsers, help)` and `run(args) -> int` (the exit code).
COMMANDS = {
    "advise": "show what each remat policy would save and recompute at a site",
    "check": "check files and folders for broken remat policies",
    "rule": "show a rule's documentation",
    "serve": "run the language server",
    "trace": "run a policy under real JAX and show what it decides",
}


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, told the terminal's width as shutil.get_terminal_size finds it:
    argparse makes one for every option it adds and would import shutil (and its compression
    modules, ~3 ms of every start) to ask, though only help and errors are ever formatted."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog, indent_increment, max_help_position, _columns() - 2 if width is None else width
        )


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    """Each parser, its subcommands' too (argparse makes them of the same class), formats with
    _Formatter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the command line `argv` (None: of any command line).

    A subcommand is built in full, and its module imported, only when `argv` names it: argparse
    takes a subcommand by its exact name. The others are there, with their help line, only when
    `argv` names none: for the help and the error that list them (each parser costs ~1 ms)."""
    parser = _Parser(prog="jax-lsp", description="Find broken JAX rematerialization policies.")
    parser.add_argument("--version", action="version", version=f"jax-lsp {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = [name for name in COMMANDS if argv is None or name in argv]
    for name, help_line in COMMANDS.items():
        if name in named:
            importlib.import_module(f"jax_lsp.cli.commands.{name}").add_parser(subparsers, help_line)
        elif not named:
            subparsers.add_parser(name, help=help_line)
    return parser
