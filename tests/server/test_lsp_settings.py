"""Settings: initializationOptions, workspace/configuration, [tool.jax-lsp], changes, bad values."""

from __future__ import annotations

import asyncio
import sys

from lsp_harness import start_session
from lsprotocol import types
from test_lsp_code_actions import POLICY


async def test_initialization_options_apply(profile, tmp_path):
    options = {"settings": {"ignore": ["JAX101"]}}
    async with start_session(profile, tmp_path, initialization_options=options) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert await lsp.diagnostics(uri) == []


async def test_workspace_configuration_overrides_initialization_options(profile, tmp_path):
    async with start_session(
        profile,
        tmp_path,
        initialization_options={"settings": {"ignore": ["JAX101"]}},
        configuration={"ignore": [], "severity": {"JAX101": "warning"}},
    ) as lsp:
        uri = lsp.open("model.py", POLICY)
        diagnostics = await lsp.diagnostics(uri)
        assert [(d.code, d.severity) for d in diagnostics] == [
            ("JAX101", types.DiagnosticSeverity.Warning)
        ] * 2


async def test_pyproject_applies_and_editor_settings_override_it(profile, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp]\nignore = ["JAX101"]\n')
    async with start_session(profile, tmp_path) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert await lsp.diagnostics(uri) == []
    async with start_session(profile, tmp_path, configuration={"ignore": []}) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert len(await lsp.diagnostics(uri)) == 2


async def test_invalid_settings_fall_back_with_one_message(profile, tmp_path):
    bad = {"select": 5, "logLevel": "loud", "ignore": ["JAX104"]}
    async with start_session(profile, tmp_path, configuration=bad) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert len(await lsp.diagnostics(uri)) == 2  # the default select, the valid ignore
        [message] = lsp.client.messages
        assert message.type == types.MessageType.Warning
        assert "`select`" in message.message and "`logLevel`" in message.message


async def test_configuration_change_republishes(profile, tmp_path):
    async with start_session(profile, tmp_path, configuration={}) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert len(await lsp.diagnostics(uri)) == 2
        lsp.client.set_configuration({"ignore": ["JAX1"]}, section="jax-lsp")
        lsp.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"jax-lsp": {"ignore": ["JAX1"]}})
        )
        await lsp.eventually(uri, lambda diagnostics: diagnostics == [])


async def test_nothing_is_published_before_the_settings_are_read(tmp_path):
    async with start_session(
        "neovim", tmp_path, configuration={"ignore": ["JAX101"]}, configuration_delay=1.0
    ) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert await lsp.diagnostics(uri) == []
        assert lsp.history and not [d for params in lsp.history for d in params.diagnostics]


async def test_empty_lua_tables_are_empty_settings(tmp_path):
    # Neovim encodes `settings = { ['jax-lsp'] = {} }` and `severity = {}` as JSON arrays.
    async with start_session("neovim", tmp_path, configuration=[]) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert len(await lsp.diagnostics(uri)) == 2
        assert lsp.client.messages == []
    async with start_session("neovim", tmp_path, configuration={"severity": [], "trace": []}) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert len(await lsp.diagnostics(uri)) == 2
        assert lsp.client.messages == []


async def test_target_version_tells_which_python_the_code_is_for(tmp_path):
    newer = f"py{sys.version_info[0]}{sys.version_info[1] + 1}"
    async with start_session("neovim", tmp_path, configuration={"target-version": newer}) as lsp:
        uri = lsp.open("model.py", "def typo(:\n    pass\n" + POLICY)
        assert len(await lsp.diagnostics(uri)) == 2
        line = next(m.message for m in lsp.client.log_messages if "not checked" in m.message)
        assert line.endswith(f"(line 1: target-version '{newer}')")


async def test_requests_before_the_settings_are_read_wait_for_the_workspace(tmp_path):
    """A hover, a completion and a definition sent right after didOpen, while the client has not
    yet answered workspace/configuration, are answered once the workspace is built: not null."""
    from lsp_harness import position_of

    (tmp_path / "model.py").write_text(
        'import jax\nfrom jax.ad_checkpoint import checkpoint_name\n\n\ndef block(x):\n    return checkpoint_name(x, "attn_out")\n',
        encoding="utf-8",
    )
    text = POLICY + 'SAVE = jax.checkpoint_policies.save_only_these_names("attn_out")\n'
    async with start_session("neovim", tmp_path, configuration={}, configuration_delay=1.0) as lsp:
        uri = lsp.open("train.py", text)
        document = types.TextDocumentIdentifier(uri)
        at = position_of(text, "first", lsp.encoding, 1)
        name = position_of(text, '"attn_out"', lsp.encoding)
        name.character += 2
        hover, completion, definition = await asyncio.gather(
            lsp.client.text_document_hover_async(types.HoverParams(document, at)),
            lsp.client.text_document_completion_async(types.CompletionParams(document, name)),
            lsp.client.text_document_definition_async(types.DefinitionParams(document, name)),
        )
        assert hover is not None and "first" in hover.contents.value
        assert completion is not None and "attn_out" in [item.label for item in completion.items]
        assert definition and definition[0].uri == (tmp_path / "model.py").as_uri()


async def test_new_remat_always_reports_callable_policies_and_a_bad_value_is_said(tmp_path):
    async with start_session("vscode", tmp_path, configuration={"newRemat": "always"}) as lsp:
        uri = lsp.open("model.py", POLICY)
        diagnostics = await lsp.diagnostics(uri)
        assert [d.code for d in diagnostics].count("JAX115") == 2, [d.code for d in diagnostics]
    async with start_session("vscode", tmp_path, configuration={"newRemat": "sometimes"}) as lsp:
        uri = lsp.open("model.py", POLICY)
        assert "JAX115" not in [d.code for d in await lsp.diagnostics(uri)]
        assert any("`new-remat` must be one of" in m.message for m in lsp.client.messages)


def test_the_target_setting_is_checked_and_the_projects_is_read(tmp_path):
    from jax_lsp.server.settings import resolve

    settings, problems = resolve({"advise": {"target": "v5e-1"}}, [tmp_path])
    assert settings.advise.target == "v5e-1" and problems == []
    settings, problems = resolve({"advise": {"target": "v5e-3"}}, [tmp_path])
    assert settings.advise.target is None
    assert any("advise.target" in p and "no v5e slice of that size" in p for p in problems), problems
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp]\ntarget = "v6e-4"\n', encoding="utf-8")
    settings, problems = resolve({}, [tmp_path])
    assert settings.core.compile_target == "v6e-4" and problems == []
