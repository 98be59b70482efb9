"""Trace notes follow the user's edits line by line, and go when their own lines change."""

import pytest

from jax_lsp.core import Span
from jax_lsp.trace.mapping import LineEdit, TraceNote, decision_rows, follow_edit, hover_markdown
from jax_lsp.trace.result import Decision, Residuals, TraceResult, TraceStatus

PATH = "/w/model.py"


def _note(line, path=PATH):
    return TraceNote(path, Span.of(line, 4, line, 20), "error", "Confirmed by trace", "JAX101")


def _lines(notes):
    return [n.span.start.line for n in notes]


@pytest.mark.parametrize(
    "start, end, text, expected",
    [
        ((0, 0), (0, 0), "# two lines\n\n", [2, 7]),  # lines inserted above: both move down
        ((0, 0), (2, 0), "", [3]),  # two whole lines deleted: the note on line 0 goes, line 5 moves up
        ((4, 0), (4, 0), "\n", [0, 6]),  # Enter at the start of line 4 pushes it down
        ((5, 9), (5, 9), "x", [0]),  # typing on the note's line drops it
        ((4, 20), (5, 0), "", [0]),  # joining line 4 with the next touches it
        ((3, 0), (3, 10), "pass", [0, 5]),  # an edit on the line above, in place
        ((6, 0), (6, 0), "\n\n\n", [0, 5]),  # below the notes: nothing moves
        ((2, 3), (3, 0), "\n\n", [0, 6]),  # the tail of line 2 and two line breaks
        ((1, 0), (9, 0), "", [0]),  # lines 1..8 deleted: the note on line 5 goes
    ],
)
def test_notes_move_with_their_lines(start, end, text, expected):
    notes = [_note(0), _note(5)]
    assert _lines(follow_edit(notes, PATH, LineEdit.of(start, end, text))) == expected


def test_a_moved_note_keeps_its_columns_and_text():
    [moved] = follow_edit([_note(5)], PATH, LineEdit.of((0, 0), (0, 0), "\n"))
    assert moved == TraceNote(PATH, Span.of(6, 4, 6, 20), "error", "Confirmed by trace", "JAX101")


def test_notes_of_other_files_stay():
    other = _note(5, path="/w/helper.py")
    assert follow_edit([other], PATH, LineEdit.of((0, 0), (9, 0), "")) == [other]


def test_windows_and_old_mac_line_breaks_count_as_lines():
    assert _lines(follow_edit([_note(5)], PATH, LineEdit.of((0, 0), (0, 0), "a\r\nb\rc\n"))) == [8]


def test_a_whole_text_replacement_drops_the_files_notes_only():
    other = _note(5, path="/w/helper.py")
    assert follow_edit([_note(0), _note(5), other], PATH, LineEdit.whole_text()) == [other]


def test_the_report_gives_each_decisions_line_and_says_the_figures_are_the_probes():
    saved = Decision("sin", "saved", "True", 2, ("grad",), path=PATH, line=7)
    offloaded = Decision(
        "dot_general",
        "offloaded",
        "Offloadable(...)",
        1,
        ("grad",),
        path=PATH,
        line=9,
        dst="pinned_host",
        dst_space="host",
    )
    inside_jax = Decision("cos", "recomputed", "False", 1, ("grad",))
    result = TraceResult(
        TraceStatus.OK, "traced", decisions=(saved, offloaded, inside_jax), residuals=Residuals(2, 64, 0)
    )
    assert decision_rows(result) == [
        ("sin", "saved", "True", "7", "2"),
        ("dot_general", "offloaded (host memory)", "Offloadable(...)", "9", "1"),
        ("cos", "recomputed", "False", "(JAX)", "1"),
    ]
    hover = hover_markdown(result)
    assert "not your model's" in hover and "- Residuals the probe kept: 2 (64 B; 0 B in host memory)" in hover
    assert "| probe primitive | decision | returned | line | count |" in hover
