"""The advisor in the editor on a checkpoint site in an installed library
(tests/fixtures/advisor/library_site),
over real LSP: the quick fix edits the user's call that passes the policy, never the library."""

from __future__ import annotations

import shutil

import pytest

from tests.agent import ADVISOR_FIXTURES, needs_linux
from tests.server.features.test_advisor import ADVISE, _advise_lenses, _execute, _hover, _quick_fixes
from tests.server.lsp_harness import apply_text_edits, until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

DIRECT = "jax.checkpoint(block, policy=policy)"
STACK = "jax.checkpoint(body, policy=policy)"
CONFIGURED = "POLICIES[self.config.remat_policy])"


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_a_library_sites_quick_fix_edits_the_users_call(server, tmp_path):
    shutil.copytree(ADVISOR_FIXTURES / "library_site", tmp_path, dirs_exist_ok=True)
    blocks = (tmp_path / "site-packages" / "stacklib" / "blocks.py").read_text(encoding="utf-8")
    blocks = blocks.replace(DIRECT + "\n", DIRECT + "  # jax-lsp: example=user_model.py:direct_example\n")
    blocks = blocks.replace(STACK + "\n", STACK + "  # jax-lsp: example=user_model.py:stack_example\n")
    blocks = blocks.replace(
        CONFIGURED + "\n", CONFIGURED + "  # jax-lsp: example=user_model.py:configured_example\n"
    )
    user_path = tmp_path / "user_model.py"
    user, user_uri = user_path.read_text(encoding="utf-8"), user_path.as_uri()
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": "1MiB"}}) as session:
        uri = session.write("site-packages/stacklib/blocks.py", blocks)
        session.open("site-packages/stacklib/blocks.py")
        lenses = await until(lambda: _advise_lenses(session, uri))
        results = {}
        for lens in lenses:
            result = await _execute(session, ADVISE, lens.command.arguments)
            if result.get("user_call"):  # FieldStack's site has no example here
                results[result["user_call"]["keyword"]] = result

        direct = results["policy"]
        [action] = await until(lambda: _quick_fixes(session, uri, blocks, DIRECT))
        suggested = direct["suggested"]["policy"]
        line = direct["user_call"]["line"]
        assert action.title.startswith(
            f"Use the suggested policy: {suggested.split('.')[-1]} (user_model.py:{line})"
        )
        assert not session.edits_for(action, uri)  # the library is not edited
        fixed = apply_text_edits(user, session.edits_for(action, user_uri), session.encoding)
        assert fixed == user.replace(
            "remat_block(layer, policy=jax.checkpoint_policies.nothing_saveable)",
            f"remat_block(layer, policy={suggested})",
        )

        stack = results["remat"]  # the library makes the policy from the value otherwise: no edit
        assert await _quick_fixes(session, uri, blocks, STACK) is None  # no disabled action either
        hover = await _hover(session, uri, blocks, STACK)
        assert "- to use it: the library makes this site's policy from " in hover
        assert f'remat="recompute" in Stack(...) at user_model.py:{stack["user_call"]["line"]}' in hover

        configured = results["remat_policy"]
        [action] = await until(lambda: _quick_fixes(session, uri, blocks, CONFIGURED))
        key = configured["suggested"]["select"]["key"]
        line = configured["user_call"]["line"]
        assert action.title.startswith(
            f"Use the suggested policy: set remat_policy to {key!r} (user_model.py:{line})"
        )
        assert not session.edits_for(action, uri)
        fixed = apply_text_edits(user, session.edits_for(action, user_uri), session.encoding)
        assert fixed == user.replace(
            'StackConfig(remat_policy="recompute")', f'StackConfig(remat_policy="{key}")'
        )
