"""`jax-lsp` command line: one subcommand per module in `jax_lsp.cli.commands` (`cli.parser`)."""

from __future__ import annotations

import gc
import os
import sys
import warnings

from jax_lsp.cli.quick_args import quick_args

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from jax_lsp.trace.service import TraceService


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
    args: argparse.Namespace | SimpleNamespace | None = quick_args(argv)
    if args is None:
        from jax_lsp.cli.parser import build_parser  # here: a plain `check` needs no argparse

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
