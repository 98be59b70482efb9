"""The editor's "Advise policy" from any line of the checkpoint call, as the CLI's `advise
FILE:LINE` (issue 47: simply's `jax.remat(` is two lines above its `policy=`)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.agent import needs_linux
from tests.server.lsp_harness import position_of

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

MODEL = """import jax
import jax.numpy as jnp

REMAT_POLICY = "dots_saveable"


def block(x, w):
    return jnp.tanh(jnp.tanh(x @ w) @ w)


def stack(x, ws):
    def body(x, w):
        apply_fn = jax.remat(
            block,
            policy=getattr(  # jax-lsp: example=model.py:example
                jax.checkpoint_policies, REMAT_POLICY, None
            ),
        )
        return apply_fn(x, w), None

    return jnp.sum(jax.lax.scan(body, x, ws)[0])


def example():
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    return {"fn": stack, "args": (x, jax.ShapeDtypeStruct((3, 8, 8), jnp.float32))}
"""


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_advise_from_the_first_line_of_the_call(server, tmp_path):
    async with server.in_folder(tmp_path, configuration={"advise": {"target": "cpu"}}) as session:
        uri = session.write("model.py", MODEL)
        session.open("model.py")
        remat = position_of(MODEL, "jax.remat(", session.encoding)
        params = types.ExecuteCommandParams(
            command="jax-lsp.advisePolicy",
            arguments=[uri, {"line": remat.line, "character": remat.character}],
        )
        result = await asyncio.wait_for(session.client.workspace_execute_command_async(params), 90)
        assert result["status"] == "ok", result
        assert result["target"]["line"] == remat.line + 3  # 1-based: the `policy=` value's line
        current = next(p for p in result["policies"] if p["current"])
        assert current["policy"] == "jax.checkpoint_policies.dots_saveable"
