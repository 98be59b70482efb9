"""The quick fix "Write a policy for B" over real LSP: an advised site offers it for the
`advise.budget` setting; run, it writes the policy, compiled with its tags, and applies its edits
(the tag, its import, the site's policy) through workspace/applyEdit."""

from __future__ import annotations

import ast
import asyncio

import pytest
from lsprotocol import types

from tests.agent import ADVISOR_FIXTURES, needs_linux
from tests.server.lsp_harness import position_of, until

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

ADVISE = "jax-lsp.advisePolicy"
COMPARE = "jax-lsp.comparePolicies"
WRITE = "jax-lsp.writePolicy"
SITE = "jax.checkpoint_policies.nothing_saveable"


def _stack() -> str:
    text = (ADVISOR_FIXTURES / "write_stack.py").read_text(encoding="utf-8")
    return text.replace(f"policy={SITE})", f"policy={SITE})  # jax-lsp: example=write_stack.py:example")


async def _actions(session, uri, text):
    actions = await session.code_actions(uri, [], at=position_of(text, SITE, session.encoding))
    return [a for a in actions if a.title.startswith("Write a policy")] or None


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_the_quick_fix_writes_the_policy_and_applies_its_edits(server, tmp_path):
    text = _stack()
    advise = {"budget": "9MiB", "target": "cpu"}
    async with server.in_folder(tmp_path, configuration={"advise": advise}) as session:
        uri = session.write("write_stack.py", text)
        session.open("write_stack.py")
        [lens] = await until(lambda: session.code_lenses(uri, ADVISE, COMPARE))
        run = session.client.workspace_execute_command_async
        await asyncio.wait_for(
            run(types.ExecuteCommandParams(command=ADVISE, arguments=lens.command.arguments)), 120
        )
        [action] = await until(lambda: _actions(session, uri, text))
        assert action.title == "Write a policy for 9 MiB"
        # a code action that carries only a command (its edits come once the policy is written).
        # lsprotocol's client converter reads any action holding "command" as a Command (its
        # `_code_action_hook`), with the code action's command as a string: read it back
        assert isinstance(action, types.Command) and isinstance(action.command, str)
        command = ast.literal_eval(action.command)
        assert command["command"] == WRITE and command["title"] == action.title and "edit" not in command
        params = types.ExecuteCommandParams(command=WRITE, arguments=command["arguments"])
        written = await asyncio.wait_for(run(params), 600)
        assert written["verdict"] == "written", written["message"]
        assert written["compiled"]["temp_bytes"] <= 9 * 2**20  # compiled, with its tag, before offered
        [applied] = session.client.applied_edits
        fixed = session.apply(types.CodeAction(title=applied.label or "", edit=applied.edit), uri)
    expression = written["expression"]
    assert f"policy={expression}" in fixed and "checkpoint_name(h @ w_gate" in fixed
    assert fixed.count("from jax.ad_checkpoint import checkpoint_name") == 1  # the module's own import
    namespace: dict = {}
    exec(compile(fixed, str(tmp_path / "write_stack.py"), "exec"), namespace)  # it runs as written
