"""Choosing and applying fixes, on hand-built findings against a real workspace."""

from __future__ import annotations

from pathlib import Path

from jax_lsp.cli.fixing import fix_all
from jax_lsp.core import Edit, Finding, Fix, Severity, Span
from jax_lsp.engine import Workspace


def _finding(path: Path, line: int, *fixes: Fix) -> Finding:
    return Finding(str(path), "JAX101", Severity.ERROR, "m", Span.of(line, 0, line, 1), fixes)


def _edit(path: Path, line: int, start: int, end: int, text: str) -> Edit:
    return Edit(str(path), Span.of(line, start, line, end), text)


def test_safe_fixes_apply_unsafe_ones_wait_and_broken_ones_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("aaaa\nbbbb\ncccc\n")
    findings = {
        str(path): [
            _finding(path, 0, Fix("safe", True, (_edit(path, 0, 0, 4, "A"),))),
            _finding(path, 1, Fix("unsafe", False, (_edit(path, 1, 0, 4, "B"),))),
            # Two edits of one fix over the same text: a core bug, not something to guess at.
            _finding(path, 2, Fix("broken", True, (_edit(path, 2, 0, 3, "x"), _edit(path, 2, 1, 4, "y")))),
        ]
    }
    ws = Workspace([tmp_path])
    outcome = fix_all(ws, findings, [], False, lambda: ({}, []))
    assert path.read_text() == "A\nbbbb\ncccc\n"
    assert (outcome.fixed, outcome.written, outcome.errors) == (1, [str(path)], [])


def test_overlapping_fixes_wait_for_the_next_round(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("abcdef\n")
    first = _finding(path, 0, Fix("outer", True, (_edit(path, 0, 0, 6, "ABCDEF"),)))
    second = _finding(path, 0, Fix("inner", True, (_edit(path, 0, 2, 4, "xx"),)))
    rounds = []

    def recheck():
        # What a real re-check would find: the inner problem is still there after round one.
        rounds.append(path)
        return ({str(path): [second]} if len(rounds) == 1 else {}), []

    outcome = fix_all(Workspace([tmp_path]), {str(path): [first, second]}, [], False, recheck)
    assert path.read_text() == "ABxxEF\n"
    assert outcome.fixed == 2 and len(rounds) == 2


def test_a_fix_that_does_not_remove_its_finding_is_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("def p(prim, *a, **k):\n    pass\n")
    stubborn = _finding(path, 0, Fix("append", True, (_edit(path, 1, 8, 8, "\n    return False"),)))
    outcome = fix_all(
        Workspace([tmp_path]), {str(path): [stubborn]}, [], False, lambda: ({str(path): [stubborn]}, [])
    )
    assert path.read_text() == "def p(prim, *a, **k):\n    pass\n    return False\n"
    assert outcome.errors == ["fixes did not converge: 1 fixable findings remain; stopped"]
