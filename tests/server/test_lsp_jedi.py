"""jedi is never on the keystroke path: the static findings come first, jedi's follow on their own."""

from __future__ import annotations

import asyncio

import pytest
from lsp_harness import start_session
from lsprotocol import types

pytest.importorskip("jax")  # jedi names `jax.checkpoint` by reading jax's own source

# Bound by unpacking a tuple, behind a star import: only jedi can name them (a plain
# `remat = jax.checkpoint` the analysis follows through the star import itself).
HELPERS = "import jax\nremat, ckpt = jax.checkpoint, jax.checkpoint\n"


def broken_policy(name: str) -> str:
    return f"def {name}(prim, *avals, **params):\n    if prim.name == 'sin':\n        return True\n\n\n"


MODEL = (
    "from helpers import *\n\n\n"
    + broken_policy("bad")
    + broken_policy("worse")
    + "f = remat(g, policy=bad)\n"
)
BAD_LINE, WORSE_LINE = 3, 8


def lines(diagnostics: list[types.Diagnostic]) -> list[int]:
    return sorted(d.range.start.line for d in diagnostics if d.code == "JAX101")


def published(lsp, uri: str, version: int) -> list[list[int]]:
    """What each publish of this version said, in order, with repeats (the index's re-check) merged."""
    said: list[list[int]] = []
    for params in lsp.history:
        if params.uri == uri and params.version == version and lines(params.diagnostics) not in said[-1:]:
            said.append(lines(params.diagnostics))
    return said


async def test_a_site_only_jedi_can_name_is_published_after_the_static_findings(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    async with start_session("neovim", tmp_path, configuration={"jediBudget": 60}) as lsp:  # push, versioned
        uri = lsp.open("model.py", MODEL)
        await lsp.eventually(uri, lambda ds: lines(ds) == [BAD_LINE])
        # The first publish is the static pass's: the star import hides what `remat` is.
        assert published(lsp, uri, 1) == [[], [BAD_LINE]]

        # A second site: the check of this edit answers without waiting for jedi, so it reuses
        # what jedi said of `remat` and knows nothing yet of `ckpt`; jedi's answer follows.
        end = types.Position(MODEL.count("\n"), 0)
        lsp.change(uri, end, end, "h = ckpt(g, policy=worse)\n")
        await lsp.eventually(uri, lambda ds: lines(ds) == [BAD_LINE, WORSE_LINE])
        assert published(lsp, uri, 2) == [[BAD_LINE], [BAD_LINE, WORSE_LINE]]


async def test_a_jedi_budget_of_zero_leaves_such_sites_unknown(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "static.py").write_text(
        "import jax\n\n\n" + broken_policy("bad") + "f = jax.checkpoint(g, policy=bad)\n"
    )
    async with start_session("neovim", tmp_path, configuration={"jediBudget": 0}) as lsp:
        model = lsp.open("model.py", MODEL)
        static = lsp.open("static.py")
        assert lines(await lsp.pushed(model, 1)) == []
        assert lines(await lsp.pushed(static, 1)) == [BAD_LINE]
        await asyncio.sleep(1)  # about when jedi's pass would have published
        lsp.change(model, types.Position(0, 0), types.Position(0, 0), "\n")
        assert lines(await lsp.pushed(model, 2)) == []
        assert all(lines(p.diagnostics) == [] for p in lsp.history if p.uri == model)
