"""`jax-lsp serve`: the language server, over stdio (the default) or TCP for debugging."""

from __future__ import annotations

import argparse


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def add_parser(subparsers: argparse._SubParsersAction, help_line: str) -> None:
    parser = subparsers.add_parser(
        "serve",
        help=help_line,
        description="Run the jax-lsp language server. It speaks LSP on stdin/stdout and logs to stderr.",
    )
    parser.add_argument(
        "--tcp", metavar="HOST:PORT", type=_host_port, help="listen on TCP instead of stdio (for debugging)"
    )
    parser.add_argument(
        "--log-level",
        choices=("error", "warning", "info", "debug"),
        default="info",
        help="stderr log level until the client's logLevel setting applies (default: info)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from jax_lsp.server import serve

    return serve(tcp=args.tcp, log_level=args.log_level)
