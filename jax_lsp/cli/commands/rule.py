"""`jax-lsp rule JAX104`: print a rule's documentation (`--all`: every rule's).

A code that is no rule (JAX001, JAX002, JAX190, JAX191) prints its summary and the link to its page."""

from __future__ import annotations

import argparse
import sys

from jax_lsp import rules
from jax_lsp.cli.errors import ERROR_EXIT, say_error
from jax_lsp.core.codes import CODES, Code, lookup


def add_parser(subparsers: argparse._SubParsersAction, help_line: str) -> None:
    parser = subparsers.add_parser("rule", help=help_line, description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("code", nargs="?", help="a rule code, e.g. JAX104")
    which.add_argument("--all", action="store_true", help="every rule")
    parser.set_defaults(run=run)


def _page(code: Code) -> str:
    rule = rules.get_rule(code.code)
    if rule is not None:
        docs = rule.docs()
    else:
        docs = f"# {code.code} ({code.name})\n\n{code.summary}. Severity: {code.severity.value}.\n"
    return f"{docs.rstrip()}\n\nOnline: {code.doc_url}\n"


def run(args: argparse.Namespace) -> int:
    if args.all:
        sys.stdout.write("\n".join(_page(CODES[r.code]) for r in rules.ALL_RULES))
        return 0
    code = lookup(args.code.strip())
    if code is None:
        known = ", ".join(CODES)
        say_error(f"unknown rule {args.code!r}; known codes: {known}")
        return ERROR_EXIT
    sys.stdout.write(_page(code))
    return 0
