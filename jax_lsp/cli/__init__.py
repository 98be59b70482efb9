"""`jax-lsp` command line: one subcommand per module in `jax_lsp.cli.commands`."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jax_lsp import __version__

if TYPE_CHECKING:
    from jax_lsp.trace.service import TraceService

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


def main(argv: list[str] | None = None, *, trace_service: TraceService | None = None) -> int:
    """Run the command line ``argv`` (default: this process's); returns its exit code.
    ``trace_service``: the service that `trace`, `advise` and `check --trace` trace in, left
    running for its caller (the tests share one warm agent so); by default each of these runs
    starts its own and shuts it down before it returns."""
    # Parsing the user's code must not print its warnings (Python 3.12+ shows a SyntaxWarning
    # for every invalid escape such as "\d" in a string): they are the user's compiler's job.
    warnings.filterwarnings("ignore", category=SyntaxWarning)
    warnings.filterwarnings("ignore", "invalid escape sequence", DeprecationWarning)
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help/--version
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    args.trace_service = trace_service
    return args.run(args)


def run() -> None:
    """The `jax-lsp` program: `main`, then the process's exit. After `check` the process ends
    without freeing its heap, as mypy's does: tearing down every parsed tree and module costs
    ~10% of a check of one file, and a check leaves nothing to run at exit (no agent, no
    thread; its cache is written and its processes joined before it returns). Its cyclic GC
    is off from its imports on (commands.check turns it off for the check): the modules make
    thousands of objects that live as long as the process, and each pass would scan them."""
    if sys.argv[1:2] == ["check"]:
        gc.disable()
    code = main()
    if sys.argv[1:2] != ["check"]:
        raise SystemExit(code)
    sys.stdout.flush()  # a reader that stopped early left stdout on os.devnull (commands.check)
    sys.stderr.flush()
    os._exit(code)
