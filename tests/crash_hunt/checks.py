"""What every generated tree must survive in process: checking, hovering and fixing."""

from __future__ import annotations

import ast
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import settings

from jax_lsp.core import apply_edits
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.engine import Workspace
from jax_lsp.engine.batch import check_paths
from jax_lsp.engine.fixes import choose_fixes

# A longer, random hunt: JAX_LSP_CRASH_HUNT_EXAMPLES=5000 pytest tests/crash_hunt
LONG_RUN = int(os.environ.get("JAX_LSP_CRASH_HUNT_EXAMPLES", "0"))


def hunt_settings(examples: int, cost: int = 1) -> settings:
    """`examples` derandomized examples (the same ones on every CI run); in a long run,
    LONG_RUN // cost random ones (a test whose example costs 50 in-process ones runs 50x fewer)."""
    return settings(
        max_examples=max(examples, LONG_RUN // cost) if LONG_RUN else examples,
        derandomize=not LONG_RUN,
        deadline=None,
        database=None,
        suppress_health_check=["too_slow", "data_too_large", "filter_too_much"],
    )


@contextmanager
def written(files: dict[str, str]) -> Iterator[Path]:
    """The files under a fresh temporary root; each must be valid Python (the generators' promise)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, text in files.items():
            ast.parse(text, filename=name)
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        yield root


def hover_positions(text: str) -> Iterator[tuple[int, int]]:
    """Where an editor may hover: the start of every word on every line (0-based, code points)."""
    for line, content in enumerate(split_lines(text)):
        for column, char in enumerate(content):
            if char.isidentifier() and (column == 0 or not content[column - 1].isidentifier()):
                yield line, column


def survives(files: dict[str, str]) -> None:
    """Check, hover and fix every file as the CLI and the server do: nothing raises, no internal
    error is recorded, and applying the fixes (safe, then unsafe too) leaves valid Python."""
    with written(files) as root:
        workspace = Workspace([root])
        workspace.index()
        findings = {name: workspace.check_file(root / name) for name in files}
        for name, text in files.items():
            for line, column in hover_positions(text):
                workspace.describe_policy(root / name, line, column)
        together = Workspace([root])
        check_paths(together, [root])
        assert workspace.take_internal_errors() == [] and together.take_internal_errors() == []

        for name, text in files.items():
            path = str(root / name)
            for unsafe in (False, True):
                edits = [
                    e for fix in choose_fixes(findings[name], unsafe) for e in fix.edits if e.path == path
                ]
                fixed = apply_edits(text, edits)
                try:
                    ast.parse(fixed)
                except SyntaxError as error:
                    kind = "unsafe" if unsafe else "safe"
                    raise AssertionError(f"the {kind} fixes of {name} broke it:\n{fixed}") from error
                workspace.set_document(path, fixed)
                workspace.check_file(path)
            workspace.close_document(path)
        assert workspace.take_internal_errors() == []
