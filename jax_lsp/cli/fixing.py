"""`jax-lsp check --fix`: the engine's fix loop over the files on disk, then the files written back.

Files are written once, at the end, atomically and in their own encoding and line endings; a
notebook gets its edited cells written back into its JSON, every other byte kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jax_lsp.core import Edit
from jax_lsp.core.notebooks.files import is_notebook
from jax_lsp.engine import Workspace, files
from jax_lsp.engine.fixes import Findings, Recheck, TextBuffer, fix_until_stable


@dataclass
class FixOutcome:
    findings: Findings  # what remains
    fixed: int = 0
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _PythonFile(TextBuffer):
    def __init__(self, data: bytes) -> None:
        self.original = files.decode(data)  # raises UndecodableError
        super().__init__(self.original.text)

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
        from jax_lsp.core.notebooks.notebook import Notebook  # only when a notebook is fixed: startup time

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

    def target(self, path: str) -> _PythonFile | _NotebookFile | None:
        """The file at `path`, read on first use; None if it cannot be."""
        if path not in self.files:
            from jax_lsp.core.notebooks.notebook import NotebookError

            try:
                data = Path(path).read_bytes()
                self.files[path] = _NotebookFile(data) if is_notebook(path) else _PythonFile(data)
            except (OSError, files.UndecodableError, NotebookError):
                return None  # the core reports the file as JAX002; nothing to fix safely
            self.data[path] = data
        return self.files[path]


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
    run = fix_until_stable(ws, findings, errors, recheck, buffers.target, unsafe)
    outcome = FixOutcome(run.findings, errors=run.errors)
    for path in sorted(buffers.files):
        if not buffers.files[path].changed():
            continue
        error = _write(path, buffers)
        if error:
            outcome.errors.append(error)
        else:
            outcome.written.append(path)
            outcome.fixed += run.applied[path]
    return outcome
