"""The trace's command-line options (`jax-lsp check --trace`, `jax-lsp trace`, `jax-lsp advise`).

Apart from the commands, so that building the command line imports nothing of the trace itself."""

from __future__ import annotations

import os

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
        type=_interpreter,
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


def add_compile_arguments(parser: argparse.ArgumentParser) -> None:
    """The limits of each candidate's compile (`advise --compile`)."""
    defaults = TraceOptions()
    parser.add_argument(
        "--compile-timeout",
        type=float,
        default=defaults.compile_timeout,
        metavar="SECONDS",
        help=f"per candidate's compile, each in a process of its own (default {defaults.compile_timeout:g})",
    )
    parser.add_argument(
        "--compile-memory-limit-mb",
        dest="compile_memory_mb",
        type=int,
        default=defaults.compile_memory_mb,
        metavar="MB",
        help=f"memory a candidate's compile may write (default {defaults.compile_memory_mb})",
    )


def trace_options(args: argparse.Namespace) -> TraceOptions:
    compile_limits = {
        name: getattr(args, name) for name in ("compile_timeout", "compile_memory_mb") if hasattr(args, name)
    }
    return TraceOptions(timeout=args.trace_timeout, memory_mb=args.trace_memory_mb, **compile_limits)


def _interpreter(value: str) -> str:
    """A path (``.venv/bin/python``) from where the command runs, since the agent starts in the
    project's root; a bare name (``python3``) is looked up on PATH as it is."""
    return os.path.abspath(value) if os.sep in value or (os.altsep and os.altsep in value) else value
