"""From a trace result to notes on source lines, next to the static findings they confirm."""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from jax_lsp.core import Finding, Severity, Span
from jax_lsp.core.codes import UNPREDICTED, Family, family_of
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.trace.result import FAILED_UNDER_JAX, TraceResult, TraceStatus

SILENT_RULES = {"string_compare": "JAX104", "device_offload": "JAX105", "falsy_policy": "JAX106"}


@dataclass(frozen=True)
class TraceNote:
    path: str
    span: Span  # 0-based lines, code-point columns
    severity: Severity
    message: str
    code: str | None = None
    confirms: str | None = None  # the static rule this note confirms

    def finding(self) -> Finding:
        """The note as a finding, for a note with a code (JAX190, or the rule it confirms)."""
        assert self.code is not None, "a note of what the trace decided is no finding"
        return Finding(self.path, self.code, self.severity, self.message, self.span)


@dataclass(frozen=True)
class LineEdit:
    """What an edit does to line numbers (0-based): it changed lines ``first``..``last_touched``,
    and the lines below them move by ``shift``."""

    first: int
    last_touched: int
    shift: int

    @classmethod
    def of(cls, start: tuple[int, int], end: tuple[int, int], text: str) -> LineEdit:
        """``text`` replaced ``start``..``end`` (line, column); only whether a column is 0
        matters, so the columns may be in any unit."""
        inserted = split_lines(text)
        last_touched = end[0]
        if end[1] == 0 and inserted[-1] == "" and (len(inserted) > 1 or start[1] == 0):
            last_touched -= 1  # whole lines went in or out just above line end[0], which is intact
        return cls(start[0], last_touched, len(inserted) - 1 - (end[0] - start[0]))

    @classmethod
    def whole_text(cls) -> LineEdit:
        """The text was replaced at once (a change without a range): every line changed."""
        return cls(0, sys.maxsize, 0)

    def moved(self, first_line: int, last_line: int) -> int | None:
        """How far lines ``first_line``..``last_line`` move; None if the edit changed them."""
        if last_line < self.first:
            return 0
        if first_line > self.last_touched:
            return self.shift
        return None


def follow_edit(notes: list[TraceNote], path: str, edit: LineEdit) -> list[TraceNote]:
    """The notes after ``edit`` of ``path``: a note on lines the edit did not touch moves with
    them; a note on a changed line no longer describes what was traced, and is dropped."""
    followed = []
    for note in notes:
        shift = edit.moved(note.span.start.line, note.span.end.line) if note.path == path else 0
        if shift is not None:
            start, end = note.span.start, note.span.end
            followed.append(
                replace(note, span=Span.of(start.line + shift, start.column, end.line + shift, end.column))
            )
    return followed


def _line_span(path: str, line: int, texts: dict[str, list[str]]) -> Span:
    """The text of a 1-based line, without its indentation."""
    lines = texts.get(path)
    if lines is None:
        try:
            with open(path, encoding="utf-8") as handle:
                lines = texts[path] = [l.rstrip("\r\n") for l in split_lines(handle.read())]
        except (OSError, UnicodeDecodeError):
            lines = texts[path] = []
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    return Span.of(line - 1, start, line - 1, max(len(text.rstrip()), start))


def _static_on(static: Iterable[Finding], path: str, line: int, codes: Iterable[str] | None = None):
    wanted = set(codes) if codes is not None else None
    return [
        f
        for f in static
        if f.path == path
        and f.span.start.line == line - 1
        and family_of(f.code) is Family.RULE
        and (wanted is None or f.code in wanted)
    ]


# The agent's own files: a frame there is the agent calling the policy, never the user's line.
AGENT_FOLDER = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir, "trace_agent")) + os.sep


def _not_users(path: str) -> bool:
    """A file of the agent, or of an installed package (JAX's): no place for a note."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    return real.startswith(AGENT_FOLDER) or "site-packages" in parts or "dist-packages" in parts


def _plural(count: int) -> str:
    return f" ×{count}" if count > 1 else ""


def trace_notes(result: TraceResult, static: Iterable[Finding] = ()) -> list[TraceNote]:
    """Notes for the editor and the CLI: errors and silent mistakes (confirming static findings
    where they agree, `JAX190` where none predicted a failure), what each `return` decided,
    and a summary on the policy."""
    static = list(static)
    texts: dict[str, list[str]] = {}
    env = result.environment or "trace"
    notes: list[TraceNote] = []
    policy = result.policy

    error = result.error
    if result.status in FAILED_UNDER_JAX and error is not None and error.path and error.line:
        under = f" under {error.mode}" if error.mode else ""
        failures: dict[tuple[str, int], str] = {}
        placed = [(error.path, error.line, f"{error.type}: {error.text}")]
        placed += [(r.path, r.line, f"TypeError: {r.text}") for r in result.rejected]
        for path, line, text in placed:
            if _not_users(path) and policy is not None:
                # A frame of the agent or of JAX is no user's line: the `policy=` line is.
                path, line = policy.path, policy.line
            failures.setdefault((path, line), text)
        for (path, line), text in failures.items():
            agreeing = _static_on(static, path, line)
            for finding in agreeing:
                notes.append(
                    TraceNote(
                        path,
                        finding.span,
                        Severity.ERROR,
                        f"Confirmed by trace ({env}){under}: {text}",
                        finding.code,
                        finding.code,
                    )
                )
            if not agreeing:
                notes.append(
                    TraceNote(
                        path,
                        _line_span(path, line, texts),
                        Severity.ERROR,
                        f"JAX rejected this policy{under} ({env}): {text}",
                        UNPREDICTED,
                    )
                )
    elif result.status is TraceStatus.NEEDS_RUN and error is not None and error.path and error.line:
        span = _line_span(error.path, error.line, texts)
        notes.append(TraceNote(error.path, span, Severity.INFORMATION, f"Not traced: {result.message}"))
    elif not result.ok and result.status is not TraceStatus.CANCELLED:
        error_path = (error.path if error and error.path else None) or (policy.path if policy else None)
        error_line = (error.line if error and error.line else None) or (policy.line if policy else None)
        if error_path and error_line:
            notes.append(
                TraceNote(
                    error_path,
                    _line_span(error_path, error_line, texts),
                    Severity.ERROR,
                    f"Trace failed ({result.status}): {result.message}",
                )
            )

    for mistake in result.silent:
        rule = SILENT_RULES.get(mistake.kind)
        agreeing = _static_on(static, mistake.path, mistake.line, [rule] if rule else None)
        if agreeing:
            for finding in agreeing:
                notes.append(
                    TraceNote(
                        mistake.path,
                        finding.span,
                        Severity.WARNING,
                        f"Confirmed by trace ({env}): {mistake.message}",
                        finding.code,
                        finding.code,
                    )
                )
        else:
            span = _line_span(mistake.path, mistake.line, texts)
            if mistake.column is not None and mistake.end_column is not None and mistake.end_line:
                span = Span.of(mistake.line - 1, mistake.column, mistake.end_line - 1, mistake.end_column)
            notes.append(
                TraceNote(
                    mistake.path, span, Severity.WARNING, f"Trace ({env}): {mistake.message}", UNPREDICTED
                )
            )

    by_line: dict[tuple[str, int], list] = defaultdict(list)
    for decision in result.decisions:
        decision_path = decision.path or (policy.path if policy else None)
        decision_line = decision.line or (policy.line if policy else None)
        if decision_path and decision_line:
            by_line[(decision_path, decision_line)].append(decision)
    for (path, line), decisions in sorted(by_line.items()):
        notes.append(
            TraceNote(
                path,
                _line_span(path, line, texts),
                Severity.INFORMATION,
                f"Trace ({env}): {summarize_decisions(decisions)}",
            )
        )

    if result.ok and policy is not None:
        notes.append(
            TraceNote(
                policy.path,
                _line_span(policy.path, policy.line, texts),
                Severity.INFORMATION,
                f"Trace ({env}): {result.message}",
            )
        )
    return notes


def summarize_decisions(decisions) -> str:
    """``saved dot_general ×4, name:attn ×2; recomputed sin, cos`` (ordered by first seen)."""
    groups: dict[str, dict[str, int]] = {}
    for d in decisions:
        verb = d.decision if d.decision != "offloaded" else f"offloaded to {d.dst}"
        if d.decision == "invalid":
            verb = f"returned invalid {d.value}"
        counts = groups.setdefault(verb, {})
        counts[d.label] = counts.get(d.label, 0) + d.count
    return "; ".join(
        f"{verb} " + ", ".join(f"{label}{_plural(n)}" for label, n in counts.items())
        for verb, counts in groups.items()
    )


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


def decision_rows(result: TraceResult) -> list[tuple[str, str, str, str, str]]:
    """(primitive, decision, value, line, count) per row, for tables."""
    rows = []
    for d in result.decisions:
        line = f"{d.line}" if d.line else "(JAX)"
        destination = f"{d.dst_space} memory" if d.dst_space else f"to {d.dst!r}"  # older JAX maps no kind
        decision = d.decision + (f" ({destination})" if d.decision == "offloaded" else "")
        rows.append((d.label, decision, d.value, line, str(d.count)))
    return rows


def report_header(result: TraceResult) -> list[str]:
    """The policy, environment, status and residuals of a trace, a line each (the table and the hover)."""
    lines = []
    if result.policy is not None:
        lines.append(f"Policy: {result.policy.text} ({result.policy.kind}, line {result.policy.line})")
    env = ", ".join(
        p
        for p in (
            result.environment,
            result.device and f"device {result.device}",
            result.python and f"python {result.python}",
        )
        if p
    )
    if env:
        lines.append(f"Environment: {env}")
    lines.append(f"Status: {result.status}: {result.message}")
    if result.residuals is not None:
        r = result.residuals
        host = (
            "host memory not reported by this jax"
            if r.host_bytes is None
            else f"{_size(r.host_bytes)} in host memory"
        )
        lines.append(f"Residuals the probe kept: {r.count} ({_size(r.bytes)}; {host})")
    if result.names:
        lines.append("Probe names: " + ", ".join(result.names))
    for line, text in result.skipped:
        lines.append(f"Not loaded: line {line}: {text}")
    return lines


PROBE_NOTE = (
    "_The trace runs the policy over jax-lsp's own probe program (matmuls, a convolution, sin, cos...):"
    " its decisions and residuals below are the probe's, not your model's (Advise policy gives those)._"
)


def hover_markdown(result: TraceResult) -> str:
    """A trace's report as Markdown, for editor hovers (the terminal's: `cli/output/trace_table.py`)."""
    parts = [f"**jax-lsp trace** ({result.environment or 'no JAX'})", "", PROBE_NOTE, ""]
    parts += [f"- {line}" for line in report_header(result)]
    if result.error is not None and result.status in FAILED_UNDER_JAX:
        parts += ["", f"JAX raised at line {result.error.line}:", "```text", result.error.text, "```"]
    for mistake in result.silent:
        parts += ["", f"Silent mistake at line {mistake.line}: {mistake.message}"]
    rows = decision_rows(result)
    if rows:
        parts += ["", "| probe primitive | decision | returned | line | count |", "|---|---|---|---|---|"]
        parts += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(parts)
