"""`jax-lsp check --fix`: apply fixes in rounds until none applies, then write the files back.

Fixes of one round must not overlap; a fix skipped for overlapping is offered again in the
next round, against the re-checked text. Files are written once, at the end, atomically and in
their own encoding and line endings; a notebook gets its edited cells written back into its
JSON, every other byte kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jax_lsp.core import Edit, Finding, Fix, apply_edits
from jax_lsp.core.edits import choose_fixes
from jax_lsp.core.notebook import Notebook, NotebookError, is_notebook
from jax_lsp.engine import Workspace, files

MAX_ROUNDS = 10

Findings = dict[str, list[Finding]]
Recheck = Callable[[], tuple[Findings, list[str]]]


@dataclass
class FixOutcome:
    findings: Findings  # what remains
    fixed: int = 0
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _PythonFile:
    def __init__(self, data: bytes) -> None:
        self.original = files.decode(data)  # raises UndecodableError
        self.text = self.original.text

    def accepts(self, edit: Edit) -> bool:
        return True

    def apply(self, edits: list[Edit]) -> None:
        self.text = apply_edits(self.text, edits)

    def changed(self) -> bool:
        return self.text != self.original.text

    def encoded(self) -> bytes:
        try:
            return files.encode(self.original, self.text)
        except UnicodeEncodeError as exc:
            raise _Unwritable(
                f"the fixed text cannot be written as {self.original.encoding}: {exc.reason}"
            ) from None


class _NotebookFile:
    """A notebook: the core sees its joined code cells; edits go into the cells they lie in."""

    def __init__(self, data: bytes) -> None:
        self.original = self.notebook = Notebook.read(data)  # raises NotebookError

    @property
    def text(self) -> str:
        return self.notebook.layout.text

    def accepts(self, edit: Edit) -> bool:
        return self.notebook.layout.edit_to_cell(edit.span) is not None  # not across cells or IPython syntax

    def apply(self, edits: list[Edit]) -> None:
        self.notebook = self.notebook.with_edits(edits)

    def changed(self) -> bool:
        return self.notebook.cells != self.original.cells

    def encoded(self) -> bytes:
        return self.notebook.to_bytes()


class _Unwritable(Exception):
    pass


class _Buffers:
    """Each file being fixed: its bytes as first read, and its text as edited so far."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.files: dict[str, _PythonFile | _NotebookFile] = {}

    def load(self, path: str) -> bool:
        if path in self.files:
            return True
        try:
            data = Path(path).read_bytes()
            self.files[path] = _NotebookFile(data) if is_notebook(path) else _PythonFile(data)
        except (OSError, files.UndecodableError, NotebookError):
            return False  # the core reports the file as JAX002; nothing to fix safely
        self.data[path] = data
        return True

    def accepts(self, fix: Fix) -> bool:
        return all(self.load(e.path) and self.files[e.path].accepts(e) for e in fix.edits)


def _choose(findings: Findings, unsafe: bool, buffers: _Buffers) -> list[Fix]:
    every = (f for fs in findings.values() for f in fs)
    return [fix for fix in choose_fixes(every, unsafe) if buffers.accepts(fix)]


def _fixable(findings: Findings, unsafe: bool) -> int:
    return sum(any(f.safe or unsafe for f in finding.fixes) for fs in findings.values() for finding in fs)


def _write(path: str, buffers: _Buffers) -> str | None:
    """Write one fixed file; an error message when it cannot be written."""
    try:
        if Path(path).read_bytes() != buffers.data[path]:
            return f"{path}: changed on disk while fixing; not written"
        files.write_atomic(Path(path), buffers.files[path].encoded())
    except _Unwritable as exc:
        return f"{path}: {exc}"
    except OSError as exc:
        return f"{path}: cannot write the fixed file: {exc.strerror or exc}"
    return None


def fix_all(
    ws: Workspace, findings: Findings, errors: list[str], unsafe: bool, recheck: Recheck
) -> FixOutcome:
    buffers = _Buffers()
    outcome = FixOutcome(findings, errors=list(errors))
    fixes_in: dict[str, int] = {}  # applied fixes, counted in the file of their first edit
    fixable = _fixable(outcome.findings, unsafe)
    for _ in range(MAX_ROUNDS):
        chosen = _choose(outcome.findings, unsafe, buffers)
        if not chosen:
            break
        edits_by_path: dict[str, list[Edit]] = {}
        for fix in chosen:
            for edit in fix.edits:
                edits_by_path.setdefault(edit.path, []).append(edit)
        for path, edits in edits_by_path.items():
            buffers.files[path].apply(edits)
            ws.set_document(Path(path), buffers.files[path].text)
        for fix in chosen:
            fixes_in[fix.edits[0].path] = fixes_in.get(fix.edits[0].path, 0) + 1
        # A fix can change findings in other files (a policy used across modules): re-check all.
        outcome.findings, outcome.errors = recheck()
        before, fixable = fixable, _fixable(outcome.findings, unsafe)
        if fixable >= before:  # a fix that does not remove its finding would be applied again
            outcome.errors.append(f"fixes did not converge: {fixable} fixable findings remain; stopped")
            break
    for path in sorted(buffers.files):
        if not buffers.files[path].changed():
            continue
        error = _write(path, buffers)
        if error:
            outcome.errors.append(error)
        else:
            outcome.written.append(path)
            outcome.fixed += fixes_in.get(path, 0)
    return outcome
