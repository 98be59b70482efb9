"""`jax-lsp trace FILE[:LINE[:COLUMN]]`: run a policy under real JAX and show what it decides.

Without LINE, every policy site of the file is traced. Exit 0 when JAX accepts every policy
and nothing silent went wrong, 1 when a trace found a problem, 2 when a trace could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jax_lsp.cli.errors import fail
from jax_lsp.cli.output import display_path
from jax_lsp.cli.output.trace_table import trace_table
from jax_lsp.cli.site_argument import CommandError, Project, SiteArgument, add_site_argument
from jax_lsp.cli.trace_arguments import add_trace_arguments, trace_options
from jax_lsp.cli.tracing import admitted_notes, trace_service
from jax_lsp.core import Severity
from jax_lsp.trace.locations import default_checkpoint_on, no_policy_result
from jax_lsp.trace.mapping import TraceNote, trace_notes
from jax_lsp.trace.result import NOT_RUN


def add_parser(subparsers: argparse._SubParsersAction, help_line: str) -> None:
    parser = subparsers.add_parser(
        "trace",
        help=help_line,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_site_argument(parser, "a policy= argument, a policy def or a lambda")
    parser.add_argument("--output-format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--root",
        type=Path,
        help="folder put on sys.path for project imports "
        "(default: the project root: the nearest folder with pyproject.toml, setup.py, setup.cfg or .git)",
    )
    add_trace_arguments(parser, flag=False)
    parser.set_defaults(run=run)


def _note_json(note: TraceNote) -> dict:
    span = note.span
    return {
        "path": note.path,
        "line": span.start.line + 1,
        "column": span.start.column + 1,
        "end_line": span.end.line + 1,
        "end_column": span.end.column + 1,
        "severity": note.severity.value,
        "code": note.code,
        "confirms": note.confirms,
        "message": note.message,
    }


def _note_line(note: TraceNote) -> str:
    code = f"{note.code} " if note.code else ""
    where = f"{display_path(note.path)}:{note.span.start.line + 1}:{note.span.start.column + 1}"
    return f"{where}: {code}{note.message}"


# What a script reading `--output-format json` gets when nothing could be traced.
_NOTHING_TRACED = {"json": "[]\n"}.get


def run(args: argparse.Namespace) -> int:
    try:
        traced = SiteArgument.parse(args.site)
        project = Project.open(traced.path, args.root)
        positions = traced.positions(project.workspace, "trace")
    except CommandError as exc:
        return fail(args.output_format, str(exc), _NOTHING_TRACED)
    path, ws = traced.path, project.workspace
    static = ws.check_file(path)
    reports = []
    with trace_service(args) as service:
        for line, column in positions:
            checkpoint = default_checkpoint_on(ws, str(path), line)
            result = (
                no_policy_result(checkpoint)
                if checkpoint is not None
                else service.trace(
                    path,
                    line,
                    column,
                    root=project.root,
                    import_root=ws.imports.import_root(path),
                    interpreter=args.interpreter,
                    options=trace_options(args),
                )
            )
            reports.append((line, column, result, admitted_notes(trace_notes(result, static), ws)))

    if args.output_format == "json":
        sys.stdout.write(
            json.dumps(
                [
                    {
                        "path": str(path),
                        "line": line,
                        "column": None if column is None else column + 1,
                        "result": result.to_json(),
                        "notes": [_note_json(n) for n in notes],
                    }
                    for line, column, result, notes in reports
                ],
                indent=2,
            )
            + "\n"
        )
    else:
        blocks = []
        for line, _, result, notes in reports:
            problems = [_note_line(n) for n in notes if n.severity is not Severity.INFORMATION]
            blocks.append(
                "\n".join(
                    [
                        f"== {display_path(str(path))}:{line}",
                        trace_table(result),
                        *(["", *problems] if problems else []),
                    ]
                )
            )
        sys.stdout.write("\n\n".join(blocks) + "\n")
    if any(result.status in NOT_RUN for _, _, result, _ in reports):
        return 2
    return 1 if any(n.severity is not Severity.INFORMATION for *_, notes in reports for n in notes) else 0
