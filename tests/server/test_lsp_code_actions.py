"""Code actions: every rule's quick fix, the noqa action, fix-all, and `context.only`."""

from __future__ import annotations

import pytest
from lsprotocol import types

from jax_lsp.rules import ALL_RULES

pytestmark = pytest.mark.asyncio(loop_scope="module")

POLICY = """import jax


def first(prim, *avals, **params):
    if prim.name == "dot_general":
        return True


def second(prim, *avals, **params):
    if prim.name == "sin":
        return True


g = jax.checkpoint(lambda y: y * 2, policy=first)
h = jax.checkpoint(lambda y: y * 2, policy=second)
"""

FIXABLE = [
    pytest.param(rule, number, example, id=f"{rule.code}-{number}")
    for rule in ALL_RULES
    for number, example in enumerate(rule.INVALID)
    if example.fixed is not None
]


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
@pytest.mark.parametrize(("rule", "number", "example"), FIXABLE)
async def test_each_quick_fix_gives_the_rules_fixed_text(lsp, rule, number, example):
    uri = lsp.open("example.py", example.code)
    for _ in range(20):
        diagnostics = [d for d in await lsp.diagnostics(uri) if d.code == rule.code]
        actions = []
        for diagnostic in diagnostics:
            actions = [
                a
                for a in await lsp.code_actions(uri, [diagnostic])
                if a.title.startswith(f"jax-lsp ({rule.code}):")
            ]
            if actions:
                break
        if not actions:
            break
        assert actions[0].kind == types.CodeActionKind.QuickFix
        lsp.apply(actions[0], uri)
    assert lsp.texts[uri] == example.fixed


async def test_quick_fix_is_titled_preferred_and_applies(lsp):
    uri = lsp.open("model.py", POLICY)
    first, second = await lsp.diagnostics(uri)
    actions = await lsp.code_actions(uri, [first])
    fix = actions[0]
    assert fix.title == f"jax-lsp (JAX101): {first.data['fixes'][0]['title']}"
    assert fix.is_preferred is True
    assert list(fix.diagnostics) == [first]
    lsp.apply(fix, uri)
    assert [d.range.start.line for d in await lsp.diagnostics(uri)] == [second.range.start.line + 1]


async def test_disable_for_this_line_adds_then_extends_noqa(lsp):
    uri = lsp.open(
        "model.py",
        POLICY.replace(
            "def first(prim, *avals, **params):", "def first(prim, *avals, **params):  # noqa: JAX104"
        ),
    )
    first, second = await lsp.diagnostics(uri)
    [extend] = [a for a in await lsp.code_actions(uri, [first]) if a.title == "Disable JAX101 for this line"]
    text = lsp.apply(extend, uri)
    assert "def first(prim, *avals, **params):  # noqa: JAX104, JAX101\n" in text
    [left] = await lsp.diagnostics(uri)
    [add] = [a for a in await lsp.code_actions(uri, [left]) if a.title == "Disable JAX101 for this line"]
    assert add.kind == types.CodeActionKind.QuickFix and not add.is_preferred
    text = lsp.apply(add, uri)
    assert "def second(prim, *avals, **params):  # noqa: JAX101\n" in text
    assert await lsp.diagnostics(uri) == []


async def test_fix_all_applies_every_safe_fix(lsp):
    uri = lsp.open("model.py", POLICY)
    assert len(await lsp.diagnostics(uri)) == 2
    [fix_all] = await lsp.code_actions(uri, [], only=["source.fixAll"])
    assert fix_all.kind == "source.fixAll.jax-lsp"
    lsp.apply(fix_all, uri)
    assert lsp.texts[uri].count("return False") == 2
    assert await lsp.diagnostics(uri) == []


async def test_context_only_is_honoured(lsp):
    uri = lsp.open("model.py", POLICY)
    diagnostics = await lsp.diagnostics(uri)
    quick = await lsp.code_actions(uri, diagnostics[:1], only=[types.CodeActionKind.QuickFix])
    assert quick and all(a.kind == types.CodeActionKind.QuickFix for a in quick)
    source = await lsp.code_actions(uri, diagnostics[:1], only=[types.CodeActionKind.Source])
    assert [a.kind for a in source] == ["source.fixAll.jax-lsp"]
    assert await lsp.code_actions(uri, diagnostics[:1], only=[types.CodeActionKind.Refactor]) == []
    everything = await lsp.code_actions(uri, diagnostics[:1])
    assert {a.kind for a in everything} == {types.CodeActionKind.QuickFix, "source.fixAll.jax-lsp"}


async def test_a_stale_diagnostic_whose_finding_moved_gets_no_fix(lsp):
    uri = lsp.open("model.py", POLICY)
    first, _ = await lsp.diagnostics(uri)
    lsp.change(uri, types.Position(0, 0), types.Position(0, 0), "\n")
    await lsp.diagnostics(uri)
    assert await lsp.code_actions(uri, [first], only=[types.CodeActionKind.QuickFix]) == []


async def test_a_stale_diagnostic_whose_finding_stayed_gets_the_current_fix(lsp):
    # Ctrl+. right after typing elsewhere: the editor still shows the diagnostic of the older
    # text; the fix offered is the current finding's.
    uri = lsp.open("model.py", POLICY)
    first, _ = await lsp.diagnostics(uri)
    end = types.Position(len(POLICY.splitlines()), 0)
    lsp.change(uri, end, end, "\n# a comment at the end\n")
    await lsp.diagnostics(uri)
    actions = await lsp.code_actions(uri, [first], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions][:2] == [
        "jax-lsp (JAX101): Append `return False`",
        "Disable JAX101 for this line",
    ]


async def test_a_client_that_drops_data_still_gets_the_fix(lsp):
    uri = lsp.open("model.py", POLICY)
    first, _ = await lsp.diagnostics(uri)
    first.data = None
    titles = [a.title for a in await lsp.code_actions(uri, [first])]
    assert titles[:2] == ["jax-lsp (JAX101): Append `return False`", "Disable JAX101 for this line"]


async def test_a_request_naming_no_diagnostic_gets_the_fixes_at_its_range(lsp):
    # eglot asks at an empty region with `diagnostics: []`.
    uri = lsp.open("model.py", POLICY)
    first, _ = await lsp.diagnostics(uri)
    actions = await lsp.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(first.range.start, first.range.start),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.QuickFix]),
        )
    )
    titles = [a.title for a in actions]
    assert titles == ["jax-lsp (JAX101): Append `return False`", "Disable JAX101 for this line"]


UNCALLED_NAMES = """import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from layers import mlp


def block(x):
    q = checkpoint_name(x @ x, "query_proj")
    return mlp(checkpoint_name(jnp.sin(q), "attn_out"))


f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names)
"""

LAYERS = """import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def mlp(x):
    return checkpoint_name(jnp.tanh(x), "mlp_out")
"""


async def test_an_uncalled_names_factory_is_called_with_the_names_in_reach_before_disable(lsp):
    """JAX107 on `save_only_these_names` passed uncalled: an unsafe fix that calls it with the
    names the index finds (the module's own first, then another module's), listed before
    "Disable JAX107 for this line"; fix-all leaves it to the user."""
    lsp.write("layers.py", LAYERS)
    uri = lsp.open("model.py", UNCALLED_NAMES)
    [found] = [d for d in await lsp.diagnostics(uri) if d.code == "JAX107"]
    actions = await lsp.code_actions(uri, [found])
    names = '"attn_out", "query_proj", "mlp_out"'
    assert [a.title for a in actions] == [
        f"jax-lsp (JAX107): Call `jax.checkpoint_policies.save_only_these_names` with the names tagged "
        f"in reach: {names}",
        "Disable JAX107 for this line",
    ]
    call = actions[0]
    assert call.kind == types.CodeActionKind.QuickFix and not call.is_preferred
    fixed = lsp.apply(call, uri)
    assert fixed == UNCALLED_NAMES.replace("save_only_these_names)", f"save_only_these_names({names}))")
    assert not [d for d in await lsp.diagnostics(uri) if d.code == "JAX107"]
    [fix_all] = await lsp.code_actions(uri, [], only=["source.fixAll.jax-lsp"]) or [None]
    assert fix_all is None or lsp.edits_for(fix_all, uri) == []
