"""The CLI's tracing: the service a command traces in, and `jax-lsp check --trace` (trace every
policy site of the checked files and merge what JAX says)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from jax_lsp.cli.trace_arguments import trace_options
from jax_lsp.core import Finding
from jax_lsp.core.codes import UNPREDICTED
from jax_lsp.engine import Workspace
from jax_lsp.trace.locations import policy_anchors
from jax_lsp.trace.mapping import TraceNote, trace_notes
from jax_lsp.trace.result import NOT_RUN, TraceResult, TraceStatus
from jax_lsp.trace.service import TraceService


@contextmanager
def trace_service(args: argparse.Namespace) -> Iterator[TraceService]:
    """The service the command of ``args`` traces in: its caller's (`main`'s ``trace_service``),
    left running, or its own, shut down when the command is done."""
    if args.trace_service is not None:
        yield args.trace_service
        return
    service = TraceService()
    try:
        yield service
    finally:
        service.shutdown()


def _confirmed(finding: Finding, note: TraceNote) -> Finding:
    return finding.replace(message=f"{finding.message} [{note.message}]")


def admitted_notes(notes: list[TraceNote], ws: Workspace) -> list[TraceNote]:
    """``notes`` as the user sees them: those with a code (JAX190, a rule's confirmation) as the
    workspace's selection admits them (`Workspace.admitted`: noqa, select, severity), what the
    trace decided as is."""
    shown = {
        (f.code, f.span, f.message): f.severity for f in ws.admitted(n.finding() for n in notes if n.code)
    }
    kept = []
    for note in notes:
        severity = shown.get((note.code, note.span, note.message)) if note.code else note.severity
        if severity is not None:
            kept.append(replace(note, severity=severity))
    return kept


def merge_notes(
    findings: dict[str, list[Finding]], notes: list[TraceNote], ws: Workspace
) -> dict[str, list[Finding]]:
    """Static findings with "confirmed by trace" added where a note agrees, plus the JAX190
    findings the workspace's selection admits (`Workspace.admitted`: noqa, select, severity)."""
    merged = {path: list(found) for path, found in findings.items()}
    unpredicted = []
    for note in notes:
        if note.confirms:
            found = merged.setdefault(note.path, [])
            for i, finding in enumerate(found):
                if (
                    finding.code == note.confirms
                    and finding.span == note.span
                    and "confirmed by trace" not in (finding.message.lower())
                ):
                    found[i] = _confirmed(finding, note)
        elif note.code == UNPREDICTED:
            unpredicted.append(note.finding())
    for finding in ws.admitted(unpredicted):
        if finding not in merged.setdefault(finding.path, []):
            merged[finding.path].append(finding)
    return merged


def trace_check(
    ws: Workspace,
    findings: dict[str, list[Finding]],
    paths: list[str],
    args: argparse.Namespace,
    root: Path | str | None,
) -> tuple[dict[str, list[Finding]], list[str]]:
    """Trace every policy site in ``paths``, the checked files, clean ones included (a policy
    JAX rejects may be one no rule predicts); returns ``findings`` merged with what the traces
    found, and the traces that could not run (as error lines)."""
    static = [f for found in findings.values() for f in found]
    notes: list[TraceNote] = []
    errors: list[str] = []
    with trace_service(args) as service:
        for path in paths:
            for anchor in policy_anchors(ws, path):
                if anchor.kind != "site":
                    continue
                result: TraceResult = service.trace(
                    path,
                    anchor.line,
                    anchor.column,
                    root=root,
                    import_root=ws.imports.import_root(path),
                    interpreter=args.interpreter,
                    options=trace_options(args),
                )
                if result.status in NOT_RUN:
                    errors.append(f"{path}:{anchor.line}: trace {result.status}: {result.message}")
                    if result.status in (
                        TraceStatus.NO_JAX,
                        TraceStatus.ERROR,
                    ):  # every other trace would fail alike
                        return findings, errors
                notes += trace_notes(result, static)
    return merge_notes(findings, notes, ws), errors
