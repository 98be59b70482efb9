"""Compare policies over real LSP (pytest-lsp drives the real server): one answer per click. A
client asks Compare for the renderings its view reads, and every later advice of the site reaches
it in `jax-lsp/adviceChanged`, in those renderings: its view redraws without asking again."""

from __future__ import annotations

import pytest

from tests.agent import needs_linux
from tests.server.features.test_advisor import ADVISE, COMPARE, _advise_lenses, _execute, _mlp, _model
from tests.server.lsp_harness import until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

EVERY = {"markdown", "view", "text", "chart", "advice", "stale", "quick_fix"}


def _keys(value) -> set[str]:
    """The keys of a JSON object as the test client received it (pygls makes an object of it)."""
    return set(value) if isinstance(value, dict) else set(value._fields)


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_compare_answers_what_is_asked_and_the_notice_carries_it(server, tmp_path):
    async with server.in_folder(
        tmp_path, configuration={"advise": {"budget": "6KiB", "target": "cpu"}}
    ) as session:
        uri = _model(session, _mlp())
        [lens] = await until(lambda: _advise_lenses(session, uri))
        # a client that names nothing gets every rendering, as before (the contract only grows)
        everything = await _execute(session, COMPARE, lens.command.arguments)
        assert set(everything) == EVERY
        assert not any(
            _keys(c).issuperset({"comparison"}) for c in getattr(session.client, "advice_changes", [])
        )
        reads = ["view", "chart"] if session.profile == "vscode" else ["text", "chart"]
        asked = await _execute(session, COMPARE, [*lens.command.arguments, {"answer": reads}])
        assert set(asked) == {*reads, "stale", "quick_fix"} and asked["stale"] is None

        session.client.advice_changes = []
        click = await _execute(session, ADVISE, lens.command.arguments)  # the click: one request
        assert click["status"] == "ok"
        changes = session.client.advice_changes  # sent before the command's answer
        # each step of the advice (the estimate, the budget's check by compiling) told the view
        # with the renderings it reads, and never the ones it does not
        for change in changes:
            assert change.stale is None
            assert _keys(change.comparison) == {*reads, "stale", "quick_fix"}
        last = changes[-1].comparison
        assert last.chart.startswith("<svg xmlns=")
        if "view" in reads:
            assert list(last.view.columns) == asked["view"]["columns"]
            assert [row.label for row in last.view.rows] == [row["label"] for row in asked["view"]["rows"]]
        else:
            assert last.text.splitlines()[0] == asked["text"].splitlines()[0]
