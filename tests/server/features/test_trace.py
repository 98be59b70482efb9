"""The trace in the editor, over real LSP (pytest-lsp drives the real server over stdio)."""

import asyncio

import pytest
from lsprotocol import types

from jax_lsp.core.jax_facts import installed_jax_version
from tests.agent import AGENT_PYTHON, descendants, invalid_value_text, needs_linux, shrank_to
from tests.server.lsp_harness import cancel_ends_its_child, position_of, start_session, until

pytest.importorskip("jax")
# runs the trace agent under real JAX; reads /proc; one server (and agent) per profile for the
# tests that need no start of their own (tests/server/conftest.py's `server`)
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

# Two sites on one line, after text whose UTF-8, UTF-16 and code-point columns differ: the
# column of each lens must reach the agent as the right one.
BROKEN = """import jax

def policy(prim, *args, **params):
    if prim.name == "sin":
        return True

def fine(prim, *args, **params):
    return prim.name == "sin"

f, g = jax.checkpoint(lambda x: len("é🙂中") * x, policy=policy), jax.checkpoint(lambda x: x, policy=fine)
"""

LOOPING = """import jax
import helper

f = jax.checkpoint(lambda x: x, policy=helper.policy)
"""

QUICK = """import jax

f = jax.checkpoint(lambda x: x, policy=lambda *args, **params: True)
"""


def _in_agent_python(**settings):
    """The settings of a server that traces in AGENT_PYTHON."""
    return {"interpreter": AGENT_PYTHON, **settings}


def _traced_in_agent_python(**settings):
    """start_session's options for a server that traces in AGENT_PYTHON."""
    settings = _in_agent_python(**settings)
    return {"configuration": settings, "initialization_options": {"settings": settings}}


async def _lenses(session, uri):
    """The trace's code lenses (the advisor adds its own at the sites)."""
    return await session.code_lenses(uri, "jax-lsp.tracePolicy")


async def _trace_diagnostics(session, uri):
    async def check():
        if session.pull:
            found = await session.diagnostics(uri)
        else:
            found = (session.published.get(uri) or (None, []))[1]
        return [d for d in found if d.source == "jax-lsp trace"]

    return await until(check)


def _execute(session, lens, msg_id=None):
    return session.client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command=lens.command.command, arguments=lens.command.arguments),
        msg_id=msg_id,
    )


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_lens_command_diagnostics_and_hover(server, tmp_path):
    async with server.in_folder(tmp_path, _in_agent_python()) as session:
        uri = session.write("model.py", BROKEN)
        session.open("model.py")
        lenses = await until(lambda: _lenses(session, uri))
        site = position_of(BROKEN, "policy),", session.encoding)
        other_site = position_of(BROKEN, "fine)", session.encoding)
        definition = position_of(BROKEN, "policy(prim", session.encoding)
        other = position_of(BROKEN, "fine(prim", session.encoding)
        assert sorted((l.range.start.line, l.range.start.character) for l in lenses) == sorted(
            (p.line, p.character) for p in (definition, other, site, other_site)
        )
        assert {l.command.command for l in lenses} == {"jax-lsp.tracePolicy"}
        # Once the agent is up, the title names its jax and platform.
        titled = await until(lambda: _lenses_titled(session, uri))
        assert titled == f"Trace policy (jax {installed_jax_version(AGENT_PYTHON)}, cpu)"

        [lens] = [l for l in lenses if l.range.start == other_site]
        result = await asyncio.wait_for(asyncio.wrap_future(_execute(session, lens)), 60)
        assert (result["status"], result["policy"]["text"]) == ("ok", "policy=fine")
        [lens] = [l for l in lenses if l.range.start == site]
        result = await asyncio.wait_for(asyncio.wrap_future(_execute(session, lens)), 60)
        assert result["status"] == "jax_error"
        assert invalid_value_text() in result["error"]["text"]
        assert [n["code"] for n in result["notes"] if n["severity"] == "error"] == ["JAX101"]

        diagnostics = await _trace_diagnostics(session, uri)
        [confirmed] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
        assert (confirmed.code, confirmed.range.start) == ("JAX101", definition)
        assert confirmed.message.startswith("Confirmed by trace (jax ")
        assert confirmed.code_description.href.endswith("JAX101.md")

        hover = await session.client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=definition)
        )
        assert "**jax-lsp trace**" in hover.contents.value
        assert "| probe primitive | decision | returned | line | count |" in hover.contents.value
        if session.profile == "vscode":  # the VS Code profile takes server-initiated progress
            reports = session.client.progress_reports
            assert any(r and r[0].kind == "begin" and r[-1].kind == "end" for r in reports.values())


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_trace_diagnostics_follow_edits(server, tmp_path):
    async with server.in_folder(tmp_path, _in_agent_python()) as session:
        uri = session.write("model.py", BROKEN)
        session.open("model.py")
        site = position_of(BROKEN, "policy),", session.encoding)
        [lens] = [l for l in await until(lambda: _lenses(session, uri)) if l.range.start == site]
        await asyncio.wait_for(asyncio.wrap_future(_execute(session, lens)), 60)
        [confirmed] = [d for d in await _trace_diagnostics(session, uri) if d.code == "JAX101"]
        line = confirmed.range.start.line

        def traced(diagnostics):
            return [d for d in diagnostics if d.source == "jax-lsp trace" and d.code == "JAX101"]

        session.change(uri, types.Position(0, 0), types.Position(0, 0), "# two lines\n\n")
        [moved] = traced(
            await session.eventually(uri, lambda ds: [d.range.start.line for d in traced(ds)] == [line + 2])
        )
        assert (moved.range.start.character, moved.message) == (
            confirmed.range.start.character,
            confirmed.message,
        )
        # The traced site moved too, and its hover still shows the report.
        hover = await session.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri),
                position=types.Position(site.line + 2, site.character),
            )
        )
        assert "**jax-lsp trace**" in hover.contents.value
        # A line inserted just above moves it again; an edit on the traced line itself changes
        # what was traced, and the note goes.
        session.change(uri, types.Position(line + 2, 0), types.Position(line + 2, 0), "@jax.jit\n")
        await session.eventually(uri, lambda ds: [d.range.start.line for d in traced(ds)] == [line + 3])
        session.change(uri, types.Position(line + 3, 0), types.Position(line + 3, 0), "async ")
        await session.eventually(uri, lambda ds: not traced(ds))


async def _lenses_titled(session, uri):
    titles = {l.command.title for l in await _lenses(session, uri)}
    return next((t for t in titles if "jax" in t), None)


async def test_untrusted_workspace_refuses(tmp_path, capfd):
    async with start_session("neovim", tmp_path, initialization_options={"trusted": False}) as session:
        uri = session.write("model.py", BROKEN)
        session.open("model.py")
        await session.diagnostics(uri)  # the static check runs
        assert await _lenses(session, uri) == []
        with pytest.raises(Exception, match="Tracing is disabled: the workspace is not trusted"):
            await session.client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="jax-lsp.tracePolicy", arguments=[uri, {"line": 6, "character": 40}]
                )
            )
        # A refusal on purpose is one line in the log (the editor shows the server's stderr), no
        # traceback. The server logs it just after it answers.
        server_log = ""

        async def logged():
            nonlocal server_log
            server_log += capfd.readouterr().err
            return "Request refused: Tracing is disabled" in server_log

        await until(logged, 10)
        assert "Traceback" not in server_log and "ERROR" not in server_log


async def test_cancel_request_kills_the_run_and_exit_leaves_nothing(tmp_path):
    before = descendants()
    async with start_session("neovim", tmp_path, **_traced_in_agent_python()) as session:
        session.write("helper.py", "while True:\n    pass\n")
        uri = session.write("model.py", LOOPING)
        session.open("model.py")
        [lens] = await until(lambda: _lenses(session, uri))
        await until(lambda: _lenses_titled(session, uri), 60)  # the agent is up and idle
        server_family = descendants() - before
        future = _execute(session, lens, msg_id="trace-1")
        await cancel_ends_its_child(session, future, "trace-1", before, server_family)
    await until(shrank_to(before, set()), 10)


async def test_cancel_while_the_agent_starts_kills_the_run_it_starts(tmp_path):
    async with start_session("neovim", tmp_path, **_traced_in_agent_python()) as session:
        session.write("helper.py", "while True:\n    pass\n")
        uri = session.write("model.py", LOOPING)
        quick_uri = session.write("quick.py", QUICK)
        before = descendants()  # the server, and the agents of other tests' sessions
        looping = _execute(session, _lens_at(uri, LOOPING, "policy="), msg_id="trace-early")
        await until(_agent_started(before), 30)  # and still importing jax: the run is not submitted yet
        session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="trace-early"))
        with pytest.raises(Exception, match="cancel"):
            await asyncio.wait_for(asyncio.wrap_future(looping), 10)
        # A second trace waits for the same agent; once it is done, the cancelled run has been
        # submitted too, and must already be dead rather than looping until its 20 s timeout.
        quick = _lens_at(quick_uri, QUICK, "policy=")
        assert (await asyncio.wait_for(asyncio.wrap_future(_execute(session, quick)), 60))["status"] == "ok"
        [agent] = await _agent_started(before)()
        await until(lambda: _no_children(agent), 5)


def _lens_at(uri, text, needle):
    line = next(i for i, l in enumerate(text.splitlines()) if needle in l)
    return types.CodeLens(
        range=types.Range(types.Position(line, 0), types.Position(line, 0)),
        command=types.Command(
            title="Trace policy",
            command="jax-lsp.tracePolicy",
            arguments=[uri, {"line": line, "character": text.splitlines()[line].index(needle)}],
        ),
    )


def _agent_started(before):
    """A check: the agent started since ``before`` (its forked runs share its command line)."""

    async def check():
        found = {
            pid for pid in descendants() - before if "jax_lsp/trace_agent/agent.py" in _command_line(pid)
        }
        below_another = {pid for other in found for pid in descendants(other)}
        return sorted(found - below_another)

    return check


def _command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


async def _no_children(pid):
    return not descendants(pid)


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_trace_on_save(server, tmp_path):
    async with server.in_folder(tmp_path, _in_agent_python(trace={"onSave": True})) as session:
        uri = session.write("model.py", BROKEN)
        session.open("model.py")
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
        )
        diagnostics = await _trace_diagnostics(session, uri)
        assert "JAX101" in {d.code for d in diagnostics}


# A policy JAX rejects that no rule predicts: the trace's JAX190 on line 4 (0-based).
UNPREDICTED = """import jax

def policy(prim, *args, **params):
    return prim.no_such_attribute == 1

f = jax.checkpoint(lambda x: x, policy=policy)
"""


@pytest.mark.parametrize(
    ("settings", "noqa", "shown"),
    [
        ({}, False, types.DiagnosticSeverity.Error),
        ({"ignore": ["JAX190"]}, False, None),
        ({"severity": {"JAX190": "warning"}}, False, types.DiagnosticSeverity.Warning),
        ({}, True, None),
    ],
    ids=["as-is", "ignored", "a-warning", "noqa"],
)
@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_trace_findings_pass_the_settings_and_noqa(server, tmp_path, settings, noqa, shown):
    text = UNPREDICTED.replace("== 1\n", "== 1  # noqa: JAX190\n") if noqa else UNPREDICTED
    async with server.in_folder(tmp_path, _in_agent_python(**settings)) as session:
        uri = session.write("model.py", text)
        session.open("model.py")
        await session.diagnostics(uri)
        result = await asyncio.wait_for(
            asyncio.wrap_future(_execute(session, _lens_at(uri, text, "policy=p"))), 60
        )
        assert result["status"] == "jax_error"
        # The trace publishes before it answers: what the client holds now is what it shows.
        found = [d for d in session.published[uri][1] if d.code == "JAX190"]
        assert [(d.range.start.line, d.severity) for d in found] == ([(3, shown)] if shown else [])


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_a_trace_finding_can_be_disabled_for_its_line(server, tmp_path):
    async with server.in_folder(tmp_path, _in_agent_python()) as session:
        uri = session.write("model.py", UNPREDICTED)
        session.open("model.py")
        await session.diagnostics(uri)
        await asyncio.wait_for(
            asyncio.wrap_future(_execute(session, _lens_at(uri, UNPREDICTED, "policy=p"))), 60
        )
        [found] = [d for d in session.published[uri][1] if d.code == "JAX190"]
        actions = await session.code_actions(uri, [found], only=[types.CodeActionKind.QuickFix])
        [disable] = [a for a in actions if a.title == "Disable JAX190 for this line"]
        assert (
            session.apply(disable, uri).splitlines()[3]
            == "    return prim.no_such_attribute == 1  # noqa: JAX190"
        )


NO_POLICY = """import flax.linen as nn
import jax.numpy as jnp


class TBlock(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(jnp.tanh(x))


class Model(nn.Module):
    layers: int

    @nn.compact
    def __call__(self, x):
        cfg = {"features": 8}
        for _ in range(self.layers):
            x = nn.remat(TBlock)(cfg["features"])(x)
        return x
"""


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_a_checkpoint_without_a_policy_has_nothing_to_trace(server, tmp_path):
    """`nn.remat(TBlock)` passes no policy: the trace says JAX's default is used, runs nothing,
    puts no squiggle and shows no message (the client shows the answer); it is logged once."""
    pytest.importorskip("flax")
    async with server.in_folder(tmp_path, _in_agent_python()) as session:
        uri = session.write("model.py", NO_POLICY)
        session.open("model.py")
        await session.diagnostics(uri)
        site = position_of(NO_POLICY, "nn.remat(TBlock)", session.encoding)
        arguments = [uri, {"line": site.line, "character": site.character}]
        future = session.client.protocol.send_request(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="jax-lsp.tracePolicy", arguments=arguments),
        )
        result = await asyncio.wait_for(asyncio.wrap_future(future), 60)
        assert result["status"] == "no_policy"
        assert result["message"].startswith("nn.remat(TBlock) passes no policy, so JAX's default is used")
        await asyncio.sleep(0.5)  # anything published after the answer would be here by now
        if session.pull:
            found = await session.diagnostics(uri)
        else:
            found = (session.published.get(uri) or (None, []))[1]
        assert [d for d in found if d.source == "jax-lsp trace"] == []
        assert session.client.messages == []
        logged = [m for m in session.client.log_messages if "passes no policy" in m.message]
        assert [m.type for m in logged] == [types.MessageType.Info]


IN_A_METHOD = """import jax
import jax.numpy as jnp


class Collection:
    def __init__(self, remat_policy):
        self.remat_policy = remat_policy

    def setup(self):
        self.block = jax.checkpoint(jnp.sin, policy=getattr(jax.checkpoint_policies, self.remat_policy))
"""


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_a_policy_made_in_a_method_is_information_not_an_error(server, tmp_path):
    """EasyLM's shape: the policy is made from `self...` when the model runs. The trace cannot
    evaluate it alone; it says so, as information (an Information diagnostic on the site, no
    error message) and points to the advisor, which runs the site's example."""
    async with server.in_folder(tmp_path, _in_agent_python()) as session:
        uri = session.write("model.py", IN_A_METHOD)
        session.open("model.py")
        site = position_of(IN_A_METHOD, "getattr(", session.encoding)
        [lens] = [lens for lens in await until(lambda: _lenses(session, uri)) if lens.range.start == site]
        result = await asyncio.wait_for(asyncio.wrap_future(_execute(session, lens)), 60)
        assert result["status"] == "needs_run"
        assert result["message"].startswith(
            "The policy at line 10 is made inside `Collection.setup` as your code runs "
            "(name 'self' is not defined outside it)"
        )
        assert "Advise the site" in result["message"]
        [note] = await _trace_diagnostics(session, uri)
        assert note.severity == types.DiagnosticSeverity.Information
        assert note.range.start.line == site.line and note.message.startswith("Not traced: The policy")
        assert [m for m in session.client.messages if m.type == types.MessageType.Error] == []
