"""`jax-lsp rule JAX104`: print a rule's documentation (`--all`: every rule's)."""

from __future__ import annotations

import argparse
import sys

from jax_lsp import rules


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rule", help="show a rule's documentation", description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("code", nargs="?", help="a rule code, e.g. JAX104")
    which.add_argument("--all", action="store_true", help="every rule")
    parser.set_defaults(run=run)


def _page(rule) -> str:
    return f"{rule.docs().rstrip()}\n\nOnline: {rule.doc_url()}\n"


def run(args: argparse.Namespace) -> int:
    if args.all:
        sys.stdout.write("\n".join(_page(r) for r in rules.ALL_RULES))
        return 0
    rule = rules.get_rule(args.code.strip())
    if rule is None:
        codes = ", ".join(r.code for r in rules.ALL_RULES)
        print(f"jax-lsp: error: unknown rule {args.code!r}; known rules: {codes}", file=sys.stderr)
        return 2
    sys.stdout.write(_page(rule))
    return 0
