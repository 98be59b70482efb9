"""Checkpoint names in the editor: completion, go to definition, references, hover and JAX112,
over real LSP traffic, in each editor profile (UTF-8, UTF-16 and UTF-32 positions)."""

from __future__ import annotations

import pytest
from lsp_harness import apply_text_edits, position_of, units
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = """import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def block(x, layers=2):
    label = "é中😀"; h = checkpoint_name(jnp.sin(x), "attn_out")
    for i in range(layers):
        h = checkpoint_name(h, f"layer_{i}")
    return h
"""

TRAIN = """import jax

from model import block

cp = jax.checkpoint_policies
LABEL = "é中😀"; SAVE = cp.save_only_these_names("attn_out", "layer_3")
OFFLOAD = cp.save_and_offload_only_these_names(
    names_which_can_be_saved=[], names_which_can_be_offloaded=["attn_out"], offload_src="device", offload_dst="pinned_host"
)
f = jax.checkpoint(block, policy=SAVE)
"""


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri)


def _range(lsp, text: str, needle: str, occurrence: int = 0) -> types.Range:
    start = position_of(text, needle, lsp.encoding, occurrence)
    return types.Range(start, types.Position(start.line, start.character + units(needle, lsp.encoding)))


def _end_of(lsp, text: str) -> types.Position:
    lines = text.split("\n")
    return types.Position(len(lines) - 1, units(lines[-1], lsp.encoding))


async def _open_both(lsp, tmp_path, train: str = TRAIN) -> str:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "train.py").write_text(train, encoding="utf-8")
    uri = lsp.open("train.py")
    await lsp.diagnostics(uri)
    return uri


async def test_completion_in_a_factory_offers_the_tagged_names_and_replaces_what_is_typed(lsp, tmp_path):
    uri = await _open_both(lsp, tmp_path)
    typed = TRAIN + 'G = cp.save_only_these_names("at'
    lsp.replace_all(uri, typed)
    cursor = _end_of(lsp, typed)
    result = await lsp.client.text_document_completion_async(types.CompletionParams(_doc(uri), cursor))
    labels = [item.label for item in result.items]
    assert labels == ["attn_out"]  # the f-string tag is a shape, not a name to offer
    [item] = result.items
    assert "model.py:7" in item.detail
    assert item.text_edit.range == types.Range(types.Position(cursor.line, cursor.character - 2), cursor)
    completed = apply_text_edits(typed, [item.text_edit], lsp.encoding)
    assert completed.endswith('G = cp.save_only_these_names("attn_out')


async def test_completion_in_an_offload_list_and_in_a_checkpoint_name_call(lsp, tmp_path):
    uri = await _open_both(lsp, tmp_path)
    typed = TRAIN + 'H = cp.save_and_offload_only_these_names(names_which_can_be_saved=["a", "'
    lsp.replace_all(uri, typed)
    result = await lsp.client.text_document_completion_async(
        types.CompletionParams(_doc(uri), _end_of(lsp, typed))
    )
    assert [item.label for item in result.items] == ["attn_out"]
    model = lsp.open("model.py")
    typed = MODEL + '    z = checkpoint_name(h, "'
    lsp.replace_all(model, typed)
    result = await lsp.client.text_document_completion_async(
        types.CompletionParams(_doc(model), _end_of(lsp, typed))
    )
    # Tags for consistency: the names tagged elsewhere and the names policies give.
    assert [item.label for item in result.items] == ["attn_out", "layer_3"]


async def test_no_completion_in_other_strings(lsp, tmp_path):
    uri = await _open_both(lsp, tmp_path)
    for tail in ('print("at', 'G = cp.save_only_these_names(f"at', '# save_only_these_names("at'):
        typed = TRAIN + tail
        lsp.replace_all(uri, typed)
        result = await lsp.client.text_document_completion_async(
            types.CompletionParams(_doc(uri), _end_of(lsp, typed))
        )
        assert result is None or result.items == [], tail


async def test_definition_of_a_name_string_is_its_tag(lsp, tmp_path):
    uri = await _open_both(lsp, tmp_path)
    for needle, occurrence in (('"attn_out"', 0), ('"attn_out"', 1)):
        at = position_of(TRAIN, needle, lsp.encoding, occurrence)
        at.character += 2
        result = await lsp.client.text_document_definition_async(types.DefinitionParams(_doc(uri), at))
        assert [(r.uri, r.range) for r in result] == [
            ((tmp_path / "model.py").as_uri(), _range(lsp, MODEL, '"attn_out"'))
        ]
    # A name only a shape carries leads to the f-string tag.
    at = position_of(TRAIN, '"layer_3"', lsp.encoding)
    [found] = await lsp.client.text_document_definition_async(types.DefinitionParams(_doc(uri), at))
    assert found.range == _range(lsp, MODEL, 'f"layer_{i}"')
    nothing = position_of(TRAIN, "block,", lsp.encoding)
    assert await lsp.client.text_document_definition_async(types.DefinitionParams(_doc(uri), nothing)) is None


async def test_references_list_every_tag_and_every_policy_naming_it(lsp, tmp_path):
    uri = await _open_both(lsp, tmp_path)
    at = position_of(TRAIN, '"attn_out"', lsp.encoding)
    model_uri, train_uri = (tmp_path / "model.py").as_uri(), (tmp_path / "train.py").as_uri()
    expected = [
        (model_uri, _range(lsp, MODEL, '"attn_out"')),
        (train_uri, _range(lsp, TRAIN, '"attn_out"', 0)),
        (train_uri, _range(lsp, TRAIN, '"attn_out"', 1)),
    ]
    for declaration in (True, False):
        result = await lsp.client.text_document_references_async(
            types.ReferenceParams(
                text_document=_doc(uri),
                position=at,
                context=types.ReferenceContext(include_declaration=declaration),
            )
        )
        assert [(r.uri, r.range) for r in result] == [
            (u, r) for u, r in expected if declaration or u != model_uri
        ]


async def test_hover_on_a_name_says_where_it_is_tagged_and_which_policies_use_it(lsp, tmp_path):
    uri = await _open_both(lsp, tmp_path)
    at = position_of(TRAIN, '"attn_out"', lsp.encoding)
    at.character += 3
    hover = await lsp.client.text_document_hover_async(types.HoverParams(_doc(uri), at))
    text = hover.contents.value
    assert text.startswith('**Checkpoint name `"attn_out"`**')
    assert "Tagged by `checkpoint_name` at:\n- model.py:7" in text
    assert "Saved by:\n- `save_only_these_names` at train.py:6" in text
    assert "Offloaded by:\n- `save_and_offload_only_these_names` at train.py:7" in text
    assert hover.range == _range(lsp, TRAIN, '"attn_out"')


async def test_jax112_is_published_fixed_and_follows_edits_of_the_model(server, tmp_path):
    train = TRAIN.replace('"attn_out"', '"attn_outt"', 1).replace('["attn_out"]', '["layer_1"]')
    async with server.in_folder(tmp_path) as lsp:
        uri = await _open_both(lsp, tmp_path, train)
        [diagnostic] = await lsp.eventually(uri, lambda d: len(d) == 1)
        assert diagnostic.code == "JAX112" and diagnostic.severity == types.DiagnosticSeverity.Warning
        assert diagnostic.range == _range(lsp, train, '"attn_outt"')
        # The model (open in a buffer) comes to tag the name: the policy file is checked again.
        model = lsp.open("model.py")
        start = position_of(MODEL, '"attn_out"', lsp.encoding)
        lsp.change(
            model, start, types.Position(start.line, start.character + len('"attn_out"')), '"attn_outt"'
        )
        await lsp.eventually(uri, lambda d: d == [])
        lsp.replace_all(model, MODEL)
        [diagnostic] = await lsp.eventually(uri, lambda d: len(d) == 1)
        actions = await lsp.code_actions(uri, [diagnostic])
        [fix] = [a for a in actions if a.title.startswith("jax-lsp (JAX112)")]
        assert fix.title == 'jax-lsp (JAX112): Replace with "attn_out"' and not fix.is_preferred
        assert lsp.apply(fix, uri) == train.replace('"attn_outt"', '"attn_out"')
        await lsp.eventually(uri, lambda d: d == [])
