"""The trace's command-line options (`jax-lsp check --trace`, `jax-lsp trace`, `jax-lsp advise`).

Apart from the commands, so that building the command line imports nothing of the trace itself."""

from __future__ import annotations

from jax_lsp.trace.options import TraceOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_trace_arguments(parser: argparse.ArgumentParser, *, flag: bool) -> None:
    """The trace options; `flag` adds `--trace` itself (for `check`, where tracing is opt-in)."""
    if flag:
        parser.add_argument(
            "--trace",
            action="store_true",
            help="also run each policy under real JAX in a subprocess (this executes the project's imports)",
        )
    parser.add_argument(
        "--interpreter",
        metavar="PYTHON",
        help="the project's Python: its JAX is the release the findings speak for, and a trace runs in it (default: this one)",
    )
    prefix = "--trace-" if flag else "--"
    defaults = TraceOptions()
    parser.add_argument(
        f"{prefix}timeout",
        dest="trace_timeout",
        type=float,
        default=defaults.timeout,
        metavar="SECONDS",
        help=f"per trace (default {defaults.timeout:g})",
    )
    parser.add_argument(
        f"{prefix}memory-limit-mb",
        dest="trace_memory_mb",
        type=int,
        default=defaults.memory_mb,
        metavar="MB",
        help=f"memory a trace may write (default {defaults.memory_mb})",
    )


def trace_options(args: argparse.Namespace) -> TraceOptions:
    return TraceOptions(timeout=args.trace_timeout, memory_mb=args.trace_memory_mb)
