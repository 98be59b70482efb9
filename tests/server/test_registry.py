"""The feature registry: every feature adds to the one hover and hears the shutdown, and one
feature's failure leaves the others' answers. Also the typed diagnostic data."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from jax_lsp.core.findings import Position
from jax_lsp.server.diagnostic_data import DiagnosticData, FixData, FixEdit
from jax_lsp.server.places import Place
from jax_lsp.server.registry import LanguageFeature
from jax_lsp.server.server import JaxLanguageServer

PLACE = Place(
    uri="file:///model.py",
    key=Path("/model.py"),
    document=None,
    notebook=None,
    codec=PositionCodec(),
    position=Position(3, 4),
)
RANGE = types.Range(start=types.Position(line=3, character=0), end=types.Position(line=3, character=9))


class Answering(LanguageFeature):
    def __init__(self, server, markdown, hover_range=None):
        super().__init__(server)
        self.markdown, self.hover_range = markdown, hover_range
        self.asked: list[Place] = []
        self.stopped = 0

    async def hover(self, place):
        self.asked.append(place)
        if self.markdown is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=self.markdown),
            range=self.hover_range,
        )

    def shutdown(self):
        self.stopped += 1


class Broken(LanguageFeature):
    async def hover(self, place):
        raise RuntimeError("a bug in one feature")

    def shutdown(self):
        raise RuntimeError("a bug in one feature")


@pytest.fixture
def server():
    server = JaxLanguageServer()
    yield server
    server.stop_background_work()


async def test_every_feature_adds_to_one_hover_in_order(server):
    first, silent, second = (
        Answering(server, "static"),
        Answering(server, None),
        Answering(server, "trace", RANGE),
    )
    for feature in (first, Broken(server), silent, second):
        server.add_feature(feature)
    hover = await server.features.hover(PLACE)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == "static\n\n---\n\ntrace"
    assert hover.range == RANGE  # the first range any feature gave
    assert first.asked == silent.asked == second.asked == [PLACE]


async def test_no_answer_is_no_hover(server):
    server.add_feature(Answering(server, None))
    assert await server.features.hover(PLACE) is None


async def test_one_answer_is_shown_as_given(server):
    server.add_feature(Answering(server, "static", RANGE))
    hover = await server.features.hover(PLACE)
    assert (hover.contents.value, hover.range) == ("static", RANGE)


def test_shutdown_reaches_every_feature(server):
    first, second = Answering(server, "a"), Answering(server, "b")
    for feature in (first, Broken(server), second):
        server.add_feature(feature)
    server.stop_background_work()
    assert (first.stopped, second.stopped) == (1, 1)
    assert server.shutting_down


def test_diagnostic_data_round_trips_through_the_converter(server):
    data = DiagnosticData(
        3, [FixData("Return the policy's value", True, [FixEdit("file:///m.py", RANGE, "x")])]
    )
    wire = server.converter.unstructure(data)
    assert wire["fixes"][0]["edits"][0]["newText"] == "x"  # camelCase, as LSP's own types
    assert wire["fixes"][0]["edits"][0]["range"] == {
        "start": {"line": 3, "character": 0},
        "end": {"line": 3, "character": 9},
    }
    assert DiagnosticData.read(server.converter, wire) == data


@pytest.mark.parametrize("sent", [None, {"version": 3}, {"fixes": "none"}, "text"])
def test_diagnostic_data_a_client_changed_is_not_read(server, sent):
    assert DiagnosticData.read(server.converter, sent) is None
