"""The trace's command-line options (`jax-lsp check --trace`, `jax-lsp trace`) and their defaults.

Apart from the service, so that building the command line imports nothing of the trace itself."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MEMORY_MB = 4096


# A command line's target: FILE, FILE:LINE or FILE:LINE:COLUMN (1-based).
TARGET = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::(?P<column>\d+))?$")


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
    parser.add_argument(
        f"{prefix}timeout",
        dest="trace_timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"per trace (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        f"{prefix}memory-limit-mb",
        dest="trace_memory_mb",
        type=int,
        default=DEFAULT_MEMORY_MB,
        metavar="MB",
        help=f"address space per trace (default {DEFAULT_MEMORY_MB})",
    )


def trace_options(args: argparse.Namespace, root: Path | str | None, import_root: Path | str | None) -> dict:
    return {
        "root": root,
        "import_root": import_root,
        "interpreter": args.interpreter,
        "timeout": args.trace_timeout,
        "memory_mb": args.trace_memory_mb,
    }
