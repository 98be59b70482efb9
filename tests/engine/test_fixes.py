"""The fix loop: rounds until no fix applies, stopped (and said so) when fixes do not converge."""

from __future__ import annotations

from pathlib import Path

from jax_lsp.core import Edit, Finding, Fix, Severity, Span
from jax_lsp.engine import Workspace
from jax_lsp.engine.fixes import MAX_ROUNDS, TextBuffer, fix_until_stable

TEXT = "def p(prim, *a, **k):\n    pass\n"


def _finding(path: Path, message: str, edit: Edit) -> Finding:
    return Finding(
        str(path), "JAX101", Severity.ERROR, message, Span.of(0, 4, 0, 5), (Fix("f", True, (edit,)),)
    )


def _append(path: Path, text: str) -> Edit:
    return Edit(str(path), Span.of(1, 8, 1, 8), text)


def _setup(tmp_path: Path) -> tuple[Path, Workspace, TextBuffer]:
    path = tmp_path / "a.py"
    path.write_text(TEXT)
    return path, Workspace([tmp_path]), TextBuffer(TEXT)


def test_a_fix_that_does_not_remove_its_finding_stops_the_loop_and_says_so(tmp_path: Path) -> None:
    path, ws, buffer = _setup(tmp_path)
    stubborn = _finding(path, "m", _append(path, "\n    return False"))
    rechecks = []

    def recheck():
        rechecks.append(buffer.text)
        return {str(path): [stubborn]}, []

    run = fix_until_stable(ws, {str(path): [stubborn]}, [], recheck, lambda p: buffer)
    assert buffer.text == TEXT.replace("pass\n", "pass\n    return False\n")
    assert len(rechecks) == 1 and run.applied == {str(path): 1}
    assert run.errors == ["fixes did not converge: 1 fixable findings remain; stopped"]
    assert ws.buffer(path) == buffer.text  # the workspace holds what it re-checked


def test_fixes_that_never_settle_stop_after_the_last_round(tmp_path: Path) -> None:
    # Each round's fix removes its finding and makes a new one: no cycle, just no end.
    path, ws, buffer = _setup(tmp_path)
    rounds = [0]

    def recheck():
        rounds[0] += 1
        return {str(path): [_finding(path, f"m{rounds[0]}", _append(path, "#"))]}, []

    first = _finding(path, "m0", _append(path, "#"))
    run = fix_until_stable(ws, {str(path): [first]}, [], recheck, lambda p: buffer)
    assert rounds[0] == MAX_ROUNDS and buffer.text.count("#") == MAX_ROUNDS
    assert run.errors == [
        f"fixes did not converge in {MAX_ROUNDS} rounds: 1 fixable findings remain; stopped"
    ]


def test_a_fix_revealed_by_a_fix_is_applied_in_the_next_round(tmp_path: Path) -> None:
    # The fixable count stays at one, yet each round removes the finding it fixed.
    path, ws, buffer = _setup(tmp_path)
    first = _finding(path, "no **params", _append(path, "\n    x = 1"))
    revealed = _finding(path, "returns a policy", Edit(str(path), Span.of(1, 4, 1, 8), "return False"))
    answers = iter([{str(path): [revealed]}, {}])
    run = fix_until_stable(ws, {str(path): [first]}, [], lambda: (next(answers), []), lambda p: buffer)
    assert buffer.text == "def p(prim, *a, **k):\n    return False\n    x = 1\n"
    assert (run.findings, run.errors, run.applied) == ({}, [], {str(path): 2})


def test_a_fix_goes_only_where_its_target_lets_it(tmp_path: Path) -> None:
    path, ws, buffer = _setup(tmp_path)
    elsewhere = _finding(path, "m", _append(tmp_path / "b.py", "#"))
    here = _finding(path, "n", _append(path, "#"))
    run = fix_until_stable(
        ws,
        {str(path): [elsewhere, here]},
        [],
        lambda: ({str(path): [elsewhere]}, []),
        lambda p: buffer if p == str(path) else None,
    )
    assert buffer.text == TEXT.replace("pass\n", "pass#\n")
    assert (run.findings, run.errors, run.applied) == ({str(path): [elsewhere]}, [], {str(path): 1})
