"""The advice the editor keeps: per file, per site, where its `policy=` value is in the buffer,
followed through edits, and whether it still describes the buffer. No LSP type here: the
feature (`feature.py`) turns what this keeps into lenses, hints and diagnostics.

An advice describes the text it was computed from: an edit of its site or of a line whose
residual it shows makes it stale (the lens asks again), as does advice of a file on disk that
differs from the buffer; stale advice shows no figures, hints, warnings or fixes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from jax_lsp.core.findings import Position, Span
from jax_lsp.server.features.advisor.text import over_edit
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.mapping import LineEdit

EDITED = "the site changed since it was advised"
FROM_DISK = "advised from the file on disk, not this buffer: save to advise again"


@dataclass(frozen=True)
class Advised:
    """An advice and where its site's `policy=` value is in the buffer (followed through edits)."""

    advice: Advice
    span: Span  # the policy= value (a site without one: the checkpoint's name), 0-based code points
    residual_lines: tuple[int, ...]  # 0-based lines of the current policy's residuals, in this file
    kind: str = "site"  # the anchor's: "site", or DEFAULT for a checkpoint without a policy
    traced_text: str | None = None  # the file as the agent read it
    stale: str | None = None  # why the advice may no longer describe the buffer (EDITED, FROM_DISK)

    def moved(self, shift: int) -> Advised:
        """The site's span ``shift`` lines down (its residual lines move on their own)."""
        span = Span(
            Position(self.span.start.line + shift, self.span.start.column),
            Position(self.span.end.line + shift, self.span.end.column),
        )
        return replace(self, span=span)

    @property
    def current(self) -> PolicyAdvice | None:
        """The current policy's entry, where the advice still describes the buffer."""
        return self.advice.current if self.stale is None else None

    def holds(self, line: int) -> bool:
        """Whether 0-based ``line`` is one of the site's lines."""
        return self.span.start.line <= line <= self.span.end.line

    def edited(self, edit: LineEdit) -> tuple[Advised, bool]:
        """This advice after ``edit``: moved with its lines, or stale where the edit changed its
        site or a residual's line; and whether the edit made it stale now."""
        shift = edit.moved(self.span.start.line, self.span.end.line)
        line_shifts = [edit.moved(line, line) for line in self.residual_lines]
        if shift is None or None in line_shifts:  # what was advised changed
            stale = replace(self, span=over_edit(self.span, edit), residual_lines=(), stale=EDITED)
            return stale, self.stale is None
        lines = tuple(line + (s or 0) for line, s in zip(self.residual_lines, line_shifts))
        return replace(self.moved(shift), residual_lines=lines), False


def advised(
    path: Path,
    span: Span,
    kind: str,
    advice: Advice,
    traced_text: str | None,
    buffer_text: str | None,
) -> Advised | None:
    """What to keep of ``advice`` for the site at ``span`` (traced from ``traced_text``, the file
    on disk; ``buffer_text``: the open buffer's, None when not open); None where it shows
    nothing. Under jax_remat3 an `unsupported` advice still carries the names the new remat
    ignores."""
    current = advice.current
    if not (advice.ok or (current is not None and current.no_effect)):
        return None
    lines = tuple(
        r.line - 1
        for r in (current.residuals if current is not None else ())
        if r.path == str(path) and r.line is not None
    )
    differs = buffer_text is not None and buffer_text != traced_text
    return Advised(advice, span, lines, kind, traced_text, FROM_DISK if differs else None)


class AdvisedFiles:
    """The advice of each file's sites: path -> 0-based first line of the site -> `Advised`."""

    def __init__(self) -> None:
        self._by_path: dict[str, dict[int, Advised]] = {}

    def of(self, path: Path) -> list[Advised]:
        return list(self._by_path.get(str(path), {}).values())

    def paths(self) -> list[Path]:
        """The files that hold advice."""
        return [Path(path) for path in self._by_path]

    def holds(self, path: Path) -> bool:
        return str(path) in self._by_path

    def at(self, path: Path, line: int) -> Advised | None:
        """The advice of the site on 0-based ``line``: the one that starts there, else one whose
        (stale) lines hold it."""
        advised = self._by_path.get(str(path), {})
        return advised.get(line) or next((a for a in advised.values() if a.holds(line)), None)

    def keep(self, path: Path, kept: Advised) -> None:
        """Keep ``kept`` in place of the advice whose lines hold its site's first line."""
        by_line = self._by_path.setdefault(str(path), {})
        start = kept.span.start.line
        for old in [line for line, a in by_line.items() if a.holds(start)]:
            del by_line[old]  # its stale advice, perhaps over more lines
        by_line[start] = kept

    def follow(self, path: Path, edits: Sequence[LineEdit]) -> list[Advised]:
        """The file's advice after ``edits``, in order (`Advised.edited`); the advice they made
        stale."""
        advised = self._by_path.get(str(path))
        if advised is None:
            return []
        made_stale = []
        for edit in edits:
            kept = {}
            for item in advised.values():
                after, now_stale = item.edited(edit)
                kept[after.span.start.line] = after
                if now_stale:
                    made_stale.append(after)
            advised = kept
        self._by_path[str(path)] = advised
        return made_stale

    def outdated(self, path: Path, saved: str | None) -> list[Advised]:
        """The file's advice that no longer describes its text on disk, ``saved``."""
        return [a for a in self.of(path) if a.stale is not None or a.traced_text != saved]

    def drop(self, path: Path, items: Iterable[Advised]) -> None:
        by_line = self._by_path.get(str(path), {})
        for item in items:
            by_line.pop(item.span.start.line, None)

    def forget(self, path: Path) -> bool:
        """Forget the file's advice; whether there was some."""
        return bool(self._by_path.pop(str(path), {}))
