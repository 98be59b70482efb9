"""`jax-lsp` command line: one subcommand per module in `jax_lsp.cli.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from jax_lsp import __version__

# Each module exposes `add_parser(subparsers)` and `run(args) -> int` (the exit code).
COMMANDS = ("check", "rule", "serve", "trace")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jax-lsp", description="Find broken JAX rematerialization policies."
    )
    parser.add_argument("--version", action="version", version=f"jax-lsp {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"jax_lsp.cli.commands.{name}")
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Parsing the user's code must not print its warnings (Python 3.12+ shows a SyntaxWarning
    # for every invalid escape such as "\d" in a string): they are the user's compiler's job.
    warnings.filterwarnings("ignore", category=SyntaxWarning)
    warnings.filterwarnings("ignore", "invalid escape sequence", DeprecationWarning)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help/--version
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return args.run(args)
