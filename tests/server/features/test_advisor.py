"""The advisor in the editor, over real LSP (pytest-lsp drives the real server over stdio)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest
from lsprotocol import types

from jax_lsp.core.jax_facts import facts_for, installed_jax_version
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.fastest import seconds_text
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.compile_target import local_target
from tests.advisor_reference import saved_residuals
from tests.agent import ADVISOR_FIXTURES, HAS_TPU, descendants, needs_linux, needs_tpu, shrank_to
from tests.server.lsp_harness import (
    apply_text_edits,
    cancel_ends_its_child,
    position_of,
    start_session,
    until,
)

pytest.importorskip("jax")
# runs the trace agent under real JAX; reads /proc; one server (and agent) per profile for the
# tests that need no start of their own (tests/server/conftest.py's `server`)
pytestmark = [pytest.mark.jax, needs_linux, pytest.mark.asyncio(loop_scope="module")]

ADVISE = "jax-lsp.advisePolicy"
COMPARE = "jax-lsp.comparePolicies"
RUN = "jax-lsp.runPolicies"


async def _advise_lenses(session, uri):
    return await session.code_lenses(uri, ADVISE, COMPARE)


def _execute(session, command, arguments):
    return asyncio.wait_for(
        session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=arguments)
        ),
        90,
    )


def _model(session, text):
    uri = session.write("mlp.py", text)
    session.open("mlp.py")
    return uri


async def _open_and_advise(session, name, text):
    """Open ``name`` holding ``text`` and run its site's "Advise policy" lens: (uri, the advice)."""
    uri = session.write(name, text)
    session.open(name)
    [lens] = await until(lambda: _advise_lenses(session, uri))
    return uri, await _execute(session, ADVISE, lens.command.arguments)


def _mlp(comment=True, policy="dots_saveable"):
    text = (
        (ADVISOR_FIXTURES / "mlp.py")
        .read_text(encoding="utf-8")
        .replace(
            "policy=jax.checkpoint_policies.dots_saveable)",
            f"policy=jax.checkpoint_policies.{policy})"
            + ("  # jax-lsp: example=mlp.py:example" if comment else ""),
        )
    )
    return "# é🙂中\n" + text  # a line whose columns differ between encodings, above everything


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_lens_hints_compare_and_quick_fix(server, tmp_path):
    text = _mlp(policy="everything_saveable")
    # the estimate's figures: `cpu` compiles nothing, on a TPU machine too (where the default
    # target is the local chip: test_on_a_tpu_the_lens_shows_the_compiled_peak_for_the_chip)
    advise = {"budget": "6KiB", "target": "cpu"}
    async with server.in_folder(tmp_path, configuration={"advise": advise}) as session:
        uri = _model(session, text)
        [lens] = await until(lambda: _advise_lenses(session, uri))
        site = position_of(text, "jax.checkpoint_policies.everything_saveable", session.encoding)
        assert (lens.range.start, lens.command.title) == (site, "Advise policy")

        result = await _execute(session, ADVISE, lens.command.arguments)
        assert result["target"]["path"] == "mlp.py" and result["platform"] == "cpu"
        # what the editor receives is the one wire format: it reads back into the advice
        advice = Advice.from_contract(result, root=tmp_path)
        assert advice.path == str(tmp_path.resolve() / "mlp.py") and advice.ok
        assert json.loads(json.dumps(advice.to_contract(tmp_path, 6 * 1024))) == result
        current = next(p for p in result["policies"] if p["current"])
        assert current["policy"] == "jax.checkpoint_policies.everything_saveable"

        async def advised():
            found = await _advise_lenses(session, uri)
            return found if found and found[0].command.command == COMPARE else None

        [lens] = await until(advised)
        # compiled by the budget's check: its step predicted for this CPU (not all were compiled:
        # no fastest is named)
        step = f" · step (est.) {seconds_text(current['step_estimate_s'])} on this CPU"
        title = (
            "saves 8 arrays: 4 KiB computed, 4.5 KiB of arguments · recomputes 0 · peak (est.) 7 KiB"
            f"{step} · jax {installed_jax_version(None)}, cpu · Compare policies"
        )
        assert lens.command.title == title
        assert current["peak_bytes"] == 7 * 1024  # the lens's peak is the answer's

        hints = await session.client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=types.Range(types.Position(0, 0), types.Position(40, 0)),
            )
        )
        lines = text.split("\n")
        by_line = {h.position.line: h.label for h in hints}
        h_line = next(i for i, line in enumerate(lines) if '"h")' in line)
        assert "saved f32[8,32] 1 KiB" in by_line[h_line]
        assert hints[0].position.character == len(lines[hints[0].position.line].encode("utf-16-le")) // 2 or (
            session.encoding == "utf-8"
        )

        compared = await _execute(session, COMPARE, lens.command.arguments)
        assert "| current | `everything_saveable` |" in compared["markdown"]
        # the budget's suggestion was checked by compiling the candidates it depends on (`fit.py`):
        # the chart draws those, at their compiled temporaries
        compiled = {p["policy"]: p["compiled"] for p in compared["advice"]["policies"] if p.get("compiled")}
        assert compiled and compared["advice"]["fit_check"]["policies"]
        chart = ElementTree.fromstring(compared["chart"])
        markers = [e for e in chart.iter() if "candidate" in (e.get("class") or "").split()]
        assert len(markers) == len(compiled)
        [current] = [e for e in markers if "current" in (e.get("class") or "").split()]
        temp = format_bytes(compiled["jax.checkpoint_policies.everything_saveable"]["temp_bytes"])
        assert current.findtext("{http://www.w3.org/2000/svg}title").startswith(
            f"jax.checkpoint_policies.everything_saveable: {temp}"
        )
        suggested = compared["advice"]["suggested"]
        assert suggested["compiled"]["temp_bytes"] <= 6 * 1024
        # the view both editors show: abbreviated names with a legend, the compiled figures
        view = compared["view"]
        assert [r["label"] for r in view["rows"] if r["mark"] == "current"] == ["everything"]
        assert "compiled temp" in view["columns"]
        assert {
            "label": "everything",
            "policy": "jax.checkpoint_policies.everything_saveable",
            "error": None,
        } in (view["legend"])
        assert "* everything" in compared["text"] and "Legend:" in compared["text"]

        [action] = [
            a
            for a in await session.code_actions(uri, [], only=[types.CodeActionKind.QuickFix])
            if a.title.startswith("Use the suggested policy")
        ] or [None]
        if action is None:  # the request range is line 0: ask on the site's line
            actions = await session.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri),
                    range=types.Range(site, site),
                    context=types.CodeActionContext(diagnostics=[]),
                )
            )
            [action] = [a for a in actions or [] if a.title.startswith("Use the suggested policy")]
        assert action.title == (
            f"Use the suggested policy: {compared['advice']['suggested']['policy'].split('.')[-1]} "
            f"(compiled {format_bytes(suggested['compiled']['temp_bytes'])} within the 6 KiB budget, on cpu)"
        )
        fixed = session.apply(action, uri)
        # compiled, dots_saveable fits (its estimate, 7 KiB, did not): shorter than the policy it
        # replaces, it stays on the site's line (core/text/line_layout.py's tests lay out longer ones)
        assert suggested["policy"] == "jax.checkpoint_policies.dots_saveable"
        assert f"policy={suggested['policy']})  # jax-lsp: example=" in fixed
        compile(fixed, "mlp.py", "exec")

        # the site's line changed: the lens there asks again
        [lens] = await until(
            lambda: _until_title(session, uri, lambda t: t.startswith("Advise policy again")), 20
        )
        assert lens.range.start.line == site.line


async def _until_title(session, uri, predicate):
    lenses = await _advise_lenses(session, uri)
    return [lens for lens in lenses if predicate(lens.command.title)] or None


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_a_site_without_an_example_says_how_to_give_one(server, tmp_path):
    text = _mlp(comment=False)
    async with server.in_folder(tmp_path) as session:
        uri = _model(session, text)
        [lens] = await until(lambda: _advise_lenses(session, uri))
        assert lens.command.title == "Advise policy: give an example (see docs/advise.md)"
        result = await _execute(session, ADVISE, lens.command.arguments)
        assert result["error"]["status"] == "no_example"
        assert "--example" in result["error"]["message"]


@pytest.mark.skipif(HAS_TPU, reason="this machine has a TPU (tests/trace/test_on_tpu.py)")
@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_run_policies_runs_each_candidate_on_this_machines_device(server, tmp_path):
    """`jax-lsp.runPolicies` is `advise --run`: here, with no accelerator, on the CPU, and it says so."""
    async with server.in_folder(tmp_path) as session:
        uri = _model(session, _mlp())
        [lens] = await until(lambda: _advise_lenses(session, uri))
        result = await _execute(session, RUN, lens.command.arguments)
    advice = result["advice"]
    note = "no accelerator here: the steps ran on the CPU"
    assert advice["run"] == {"platform": "cpu", "device": "cpu", "note": note}
    assert advice["policies"] and all(p["run"]["step_s"] > 0 for p in advice["policies"])
    assert f"*--run: {note}.*" in result["markdown"] and "| step |" in result["markdown"]
    assert "peak in use" not in result["markdown"]  # the CPU counts none: no column, as in every view


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_an_example_from_pyproject_and_on_save(server, tmp_path):
    text = _mlp(comment=False)
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp.examples]\n"mlp.py" = "mlp.py:example"\n')
    async with server.in_folder(tmp_path, configuration={"advise": {"onSave": True}}) as session:
        uri = _model(session, text)
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
        )
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert lens.command.title.startswith("saves 5 arrays: 1.5 KiB computed, 4.5 KiB of arguments")


async def test_untrusted_workspace_shows_nothing_and_refuses(tmp_path):
    before = descendants()
    async with start_session("neovim", tmp_path, initialization_options={"trusted": False}) as session:
        uri = _model(session, _mlp())
        await session.diagnostics(uri)
        assert await _advise_lenses(session, uri) == []
        with pytest.raises(Exception, match="Advising is disabled: the workspace is not trusted"):
            await _execute(session, ADVISE, [uri, {"line": 15, "character": 40}])
    assert descendants() <= before


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_a_failing_example_is_a_message_not_an_error(server, tmp_path):
    shutil.copy(ADVISOR_FIXTURES / "mlp.py", tmp_path / "base.py")
    text = (
        _mlp(comment=False).replace(
            "policy=jax.checkpoint_policies.dots_saveable)",
            "policy=jax.checkpoint_policies.dots_saveable)  # jax-lsp: example=mlp.py:broken",
        )
        + "\n\ndef broken():\n    raise ValueError('no shapes yet')\n"
    )
    async with server.in_folder(tmp_path) as session:
        uri, result = await _open_and_advise(session, "mlp.py", text)
        assert result["error"]["status"] == "example_error"
        assert result["error"]["line"] == text.split("\n").index("    raise ValueError('no shapes yet')") + 1
        await session.diagnostics(uri)  # the static findings are still served


async def test_nothing_is_advised_without_a_request(tmp_path):
    """Opening, editing and saving a file with an example runs nothing without advise.onSave."""
    before = descendants()
    async with start_session("neovim", tmp_path) as session:
        uri = _model(session, _mlp())
        [lens] = await until(lambda: _advise_lenses(session, uri))
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
        )
        await session.diagnostics(uri)
        await asyncio.sleep(1.0)
        [lens] = await _advise_lenses(session, uri)
        assert lens.command.title == "Advise policy"  # not advised: no result was stored
    assert descendants() <= before


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_advice_moves_with_its_lines(server, tmp_path):
    text = _mlp()
    async with server.in_folder(tmp_path) as session:
        uri, _ = await _open_and_advise(session, "mlp.py", text)
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        line = lens.range.start.line
        session.change(uri, types.Position(0, 0), types.Position(0, 0), "# one\n# two\n")
        [moved] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert moved.range.start.line == line + 2
        hints = await session.client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=types.Range(types.Position(0, 0), types.Position(60, 0)),
            )
        )
        lines = session.texts[uri].split("\n")
        assert hints and all("@" in lines[h.position.line] for h in hints)  # the matmul lines


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_a_loops_layers_are_one_hint_whose_tooltip_says_why(server, tmp_path):
    """layer_loop.py applies one checkpointed layer 4 times: its matmul line gets one hint, `x4`,
    whose tooltip gives the reason and the line of the backward pass that reads the value."""
    text = (ADVISOR_FIXTURES / "layer_loop.py").read_text(encoding="utf-8")
    text = text.replace("dots_saveable)", "dots_saveable)  # jax-lsp: example=loop.py:example", 1)
    async with server.in_folder(tmp_path) as session:
        uri, _ = await _open_and_advise(session, "loop.py", text)
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        hints = await session.client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=types.Range(types.Position(0, 0), types.Position(60, 0)),
            )
        )
        lines = text.split("\n")
        by_line = {h.position.line: h for h in hints}
        matmul = next(i for i, line in enumerate(lines) if "# matmul" in line)
        named = next(i for i, line in enumerate(lines) if "# named" in line)
        assert by_line[matmul].label == " saved f32[8,16] 512 B x4"
        tooltip = by_line[matmul].tooltip
        assert isinstance(tooltip, types.MarkupContent)
        assert tooltip.value == (
            "`f32[8,16]` x4 (output of dot_general): saved by the policy (`policy`). "
            f"Read by the backward pass at loop.py:{named + 1}."
        )


async def test_cancel_request_kills_the_run(tmp_path):

    text = (
        _mlp(comment=False).replace("dots_saveable)", "dots_saveable)  # jax-lsp: example=mlp.py:forever", 1)
        + "\n\ndef forever():\n    while True:\n        pass\n"
    )
    before = descendants()
    async with start_session("neovim", tmp_path) as session:
        uri = _model(session, text)
        [lens] = await until(lambda: _advise_lenses(session, uri))

        async def agent_ready():  # the trace's lens names jax once the agent is up and idle
            result = await session.client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
            )
            return any("(jax " in lens.command.title for lens in result or [])

        await until(agent_ready)
        family = descendants() - before
        future = session.client.protocol.send_request(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command=ADVISE, arguments=lens.command.arguments),
            msg_id="advise-1",
        )
        await cancel_ends_its_child(session, future, "advise-1", before, family)
    await until(shrank_to(before, set()), 10)


def _within(result, budget):
    """What a suggestion's title says it was chosen for: its compiled temporaries (the budget's
    check compiled it) or its estimated peak, the budget, the target."""
    suggested = result["suggested"]
    compiled = suggested.get("compiled")
    size = (
        f"compiled {format_bytes(compiled['temp_bytes'])}"
        if compiled
        else (f"peak (est.) {format_bytes(suggested['peak_bytes'])}")
    )
    return f"({size} within the {budget} budget, on {result['platform']})"


async def _quick_fixes(session, uri, text, needle):
    site = position_of(text, needle, session.encoding)
    actions = await session.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(site, site),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in actions or [] if a.title.startswith("Use the suggested policy")] or None


async def _hints(session, uri):
    """The inlay hints of the buffer's first 80 lines."""
    return await session.client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(80, 0)),
        )
    )


async def _hover(session, uri, text, needle):
    """The hover's Markdown at ``needle`` in ``text``."""
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), position_of(text, needle, session.encoding))
    )
    return hover.contents.value if hover is not None else ""


EASYLM_CONFIG = """from types import SimpleNamespace


def get_default_config():
    config = SimpleNamespace()
    config.remat_policy = "nothing_saveable"
    return config


class LlamaConfig:
    def __init__(self, hidden_size=32, intermediate_size=64, num_layers=2, remat_policy=None):
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_layers = num_layers
        self.remat_policy = remat_policy or get_default_config().remat_policy
"""


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_a_policy_chosen_by_a_key_is_fixed_at_the_keys_literal(server, tmp_path):
    """The quick fix sets the key's literal default, in its own file, where EasyLM writes it (an
    attribute assignment, `config.remat_policy = '...'`); where it changed since, or where the
    project writes none, no action stands in for a message (VS Code hides a disabled one): the
    hover and Compare say what to set and where. The site is never replaced."""
    shutil.copytree(ADVISOR_FIXTURES / "select_helper", tmp_path, dirs_exist_ok=True)
    (tmp_path / "config.py").write_text(EASYLM_CONFIG, encoding="utf-8")
    model = (tmp_path / "model.py").read_text(encoding="utf-8")
    model = model.replace("remat_policy))\n", "remat_policy))  # jax-lsp: example=model.py:example\n")
    table = (ADVISOR_FIXTURES / "select_table.py").read_text(encoding="utf-8")
    table = table.replace('remat: str = "full"', "remat: str = FULL").replace(
        "POLICIES = {", 'FULL, DOTS = "full", "dots"\nPOLICIES = {'
    )
    table = table.replace('Config(remat="dots")', "Config(remat=DOTS)")
    table = table.replace("(x, w1, w2)\n", "(x, w1, w2)  # jax-lsp: example=table.py:example\n", 1)
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": "80KiB"}}) as session:
        config_uri = (tmp_path / "config.py").as_uri()
        needle = "# jax-lsp: example"
        uri, result = await _open_and_advise(session, "model.py", model)
        line = result["suggested"]["setting"]["line"]
        assert EASYLM_CONFIG.split("\n")[line - 1] == '    config.remat_policy = "nothing_saveable"'
        [action] = await until(lambda: _quick_fixes(session, uri, model, needle))
        assert action.title == (
            f"Use the suggested policy: set remat_policy to 'checkpoint_dots' (config.py:{line}) "
            + _within(result, "80 KiB")
        )
        assert action.disabled is None and not session.edits_for(action, uri)
        fixed = apply_text_edits(EASYLM_CONFIG, session.edits_for(action, config_uri), session.encoding)
        assert fixed == EASYLM_CONFIG.replace('= "nothing_saveable"', '= "checkpoint_dots"')
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        compared = await _execute(session, COMPARE, lens.command.arguments)
        assert compared["quick_fix"] == {
            "policy": result["suggested"]["policy"],
            "title": action.title,
            "note": None,
        }
        session.open("config.py")  # edited since: the fix would land elsewhere, so none is offered
        start = types.Position(line - 1, 0)
        session.change(config_uri, start, start, "  ")
        assert await _quick_fixes(session, uri, model, needle) is None
        changed = f"config.py:{line} changed since the advice: advise again"
        assert f"- to use it: {changed}" in await _hover(session, uri, model, needle)

        uri, result = await _open_and_advise(session, "table.py", table)  # no literal default anywhere
        assert result["suggested"]["select"]["key"] == "dots" and result["setting"] is None
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        assert await _quick_fixes(session, uri, table, needle) is None
        to_do = (
            "Set cfg.remat to 'dots': no literal default of remat in the project: set remat where your "
            "run's configuration gives it (a flag, a config file)"
        )
        assert f"- to use it: {to_do}" in await _hover(session, uri, table, needle)
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        compared = await _execute(session, COMPARE, lens.command.arguments)
        assert compared["quick_fix"] == {
            "policy": result["suggested"]["policy"],
            "title": None,
            "note": to_do,
        }


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_a_policy_chosen_by_getattr_is_fixed_at_the_field_in_the_same_file(server, tmp_path):
    text = (ADVISOR_FIXTURES / "select_getattr.py").read_text(encoding="utf-8")
    text = text.replace(
        "self.remat_policy, None)\n", "self.remat_policy, None)  # jax-lsp: example=vit.py:example\n"
    )
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": "100KiB"}}) as session:
        uri, result = await _open_and_advise(session, "vit.py", text)
        line = result["suggested"]["setting"]["line"]
        [action] = await until(lambda: _quick_fixes(session, uri, text, "# jax-lsp: example"))
        assert (
            action.title
            == f"Use the suggested policy: set remat_policy to 'dots_saveable' (vit.py:{line}) "
            + _within(result, "100 KiB")
        )
        fixed = session.apply(action, uri)
        assert fixed == text.replace(
            'remat_policy: str = "nothing_saveable"', 'remat_policy: str = "dots_saveable"'
        )


NO_POLICY = """import jax
import jax.numpy as jnp


@jax.checkpoint  # jax-lsp: example=block.py:example
def block(x, w1, w2):
    h = jnp.tanh(x @ w1)
    return jnp.sin(h @ w2)


def example():
    f32 = jnp.float32
    return (
        jax.ShapeDtypeStruct((8, 16), f32),
        jax.ShapeDtypeStruct((16, 32), f32),
        jax.ShapeDtypeStruct((32, 16), f32),
    )
"""


# jax's parts imported by name, `jax` itself never bound: the fix must import it
NO_POLICY_NO_JAX = (
    NO_POLICY.replace("import jax\n", "from jax import ShapeDtypeStruct, checkpoint\n", 1)
    .replace("@jax.checkpoint  #", "@checkpoint  #")
    .replace("jax.ShapeDtypeStruct", "ShapeDtypeStruct")
)
FIXED_IMPORTS = {
    NO_POLICY: ("import jax\n", "import functools\nimport jax\n"),
    NO_POLICY_NO_JAX: ("from jax", "import jax\nimport functools\nfrom jax"),
}


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
@pytest.mark.parametrize("text", [NO_POLICY, NO_POLICY_NO_JAX], ids=["jax imported", "jax unbound"])
async def test_a_checkpoint_without_a_policy_is_advised_and_given_the_suggestion(server, text, tmp_path):
    """`@jax.checkpoint` with no policy: JAX's default is the current policy, and the quick fix
    imports functools and decorates with `functools.partial(jax.checkpoint, policy=...)`; where
    the module binds no `jax` (its parts imported by name), it imports jax too."""
    async with server.in_folder(tmp_path, configuration={"advise": {"budget": "64KiB"}}) as session:
        uri = session.write("block.py", text)
        session.open("block.py")
        [lens] = await until(lambda: _advise_lenses(session, uri))
        checkpoint = "jax.checkpoint" if text is NO_POLICY else "checkpoint"
        site = position_of(text, f"{checkpoint}  #", session.encoding)
        assert (lens.range.start, lens.command.title) == (site, "Advise policy (none given: JAX's default)")
        result = await _execute(session, ADVISE, lens.command.arguments)
        current = next(p for p in result["policies"] if p["current"])
        assert (current["policy"], result["target"]["line"]) == ("None", 5)
        nothing = next(p for p in result["policies"] if p["policy"].endswith(".nothing_saveable"))
        assert current["residuals"] == nothing["residuals"]
        [lens] = await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        compared = await _execute(session, COMPARE, lens.command.arguments)
        assert "| current | `None (default: nothing_saveable)` |" in compared["markdown"]

        suggested = compared["advice"]["suggested"]["policy"]
        [action] = await until(lambda: _quick_fixes(session, uri, text, f"{checkpoint}  #"))
        fixed = session.apply(action, uri)
        assert fixed == text.replace(*FIXED_IMPORTS[text], 1).replace(
            f"@{checkpoint}  #", f"@functools.partial({checkpoint}, policy={suggested})  #"
        )
    namespace: dict = {}
    exec(compile(fixed, str(tmp_path / "block.py"), "exec"), namespace)
    kept = saved_residuals(namespace["block"], *namespace["example"]())
    entry = next(p for p in compared["advice"]["policies"] if p["policy"] == suggested)
    assert sorted((list(a.shape), str(a.dtype)) for a, _ in kept) == sorted(
        (r["shape"], r["dtype"]) for r in entry["residuals"]
    )


def _no_effect_model(comment=""):
    """The fixture whose policy names three names that change nothing, its example on the site's
    first line, then ``comment``."""
    text = (ADVISOR_FIXTURES / "no_effect.py").read_text(encoding="utf-8")
    return text.replace(
        "save_and_offload_only_these_names(\n",
        f"save_and_offload_only_these_names(  # jax-lsp: example=no_effect.py:example{comment}\n",
    )


@pytest.mark.parametrize("server", ["vscode", "neovim"], indirect=True)
async def test_a_name_that_changes_nothing_is_a_warning_with_exact_fixes(server, tmp_path):
    """JAX191 on the site for each name of its policy that changes nothing; the quick fixes drop
    the name (the text the agent traced) or use the candidate that keeps the same."""
    text = _no_effect_model()
    async with server.in_folder(tmp_path) as session:
        uri, _ = await _open_and_advise(session, "no_effect.py", text)
        found = await session.eventually(uri, lambda ds: any(d.code == "JAX191" for d in ds))
        warnings = sorted((d for d in found if d.code == "JAX191"), key=lambda d: d.message)
        assert [d.message.split(":")[0] for d in warnings] == [
            "'decoder_layer_input' (saved)",
            "'mlpwo' (saved)",
            "'query_proj' (offloaded)",
        ]
        assert all(
            d.severity == types.DiagnosticSeverity.Warning and d.source == "jax-lsp advise" for d in warnings
        )
        assert warnings[0].code_description.href.endswith("docs/rules/JAX191.md")
        assert "the backward pass never reads the value it names" in warnings[1].message
        site = position_of(text, "jax.checkpoint_policies.save_and_offload", session.encoding)
        assert warnings[0].range.start == site

        actions = await session.code_actions(uri, warnings, only=[types.CodeActionKind.QuickFix])
        # The fixes travel in the diagnostics' data, as a rule's do, and read as a rule's.
        drop = next(
            a
            for a in actions
            if a.title == "jax-lsp (JAX191): Drop 'mlpwo' from the policy (it changes nothing)"
        )
        assert drop.is_preferred and drop.diagnostics[0].code == "JAX191"
        assert "Disable JAX191 for this line" in {a.title for a in actions}
        # Neovim takes no documentChanges: every quick fix comes as `changes`.
        shapes = {
            (a.edit.changes is not None, a.edit.document_changes is not None) for a in actions if a.edit
        }
        assert shapes == {(False, True) if session.profile == "vscode" else (True, False)}
        fixed = session.apply(drop, uri)
        assert 'names_which_can_be_saved=["decoder_layer_input", "mlpwi"],' in fixed
        assert (
            fixed.replace('"decoder_layer_input", "mlpwi"]', '"decoder_layer_input", "mlpwi", "mlpwo"]')
            == text
        )
        # the site changed: its advice and its warnings are gone
        await session.eventually(uri, lambda ds: not any(d.code == "JAX191" for d in ds))


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_fix_all_drops_a_name_that_changes_nothing_and_never_switches_the_policy(server, tmp_path):
    """Fix-all applies JAX191's safe fix as a rule's: one name dropped (each was traced to change
    nothing alone, not together); the unsafe switch to another policy is left to the user."""
    text = _no_effect_model()
    names = ("decoder_layer_input", "mlpwo", "query_proj")  # each changes nothing
    async with server.in_folder(tmp_path) as session:
        uri, _ = await _open_and_advise(session, "no_effect.py", text)
        await session.eventually(uri, lambda ds: any(d.code == "JAX191" for d in ds))
        [fix_all] = await session.code_actions(uri, [], only=["source.fixAll.jax-lsp"])
        fixed = session.apply(fix_all, uri)
        policy = fixed.split("save_and_offload_only_these_names(")[1].split("\n    ),")[0]
        assert [name for name in names if f'"{name}"' not in policy] == ["decoder_layer_input"], policy
        assert 'names_which_can_be_saved=["mlpwi", "mlpwo"],' in policy


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_noqa_on_the_sites_line_hides_its_jax191(server, tmp_path):
    text = _no_effect_model("  # noqa: JAX191")
    async with server.in_folder(tmp_path) as session:
        uri, advice = await _open_and_advise(session, "no_effect.py", text)
        current = next(p for p in advice["policies"] if p["current"])
        assert len(current["no_effect"]) == 3  # advised, and found the names that change nothing
        # The advisor publishes before it answers: what the client holds now is what it shows.
        assert not [d for d in session.published[uri][1] if d.code == "JAX191"]


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_a_policy_that_keeps_what_a_candidate_keeps_can_switch_to_it(server, tmp_path):
    page = (Path(__file__).parents[3] / "docs" / "rules" / "JAX191.md").read_text(encoding="utf-8")
    text = page.split("```python\n")[1].split("```", 1)[0]
    text = text.replace('"mlpwo")\n', '"mlpwo")  # jax-lsp: example=example.py:example\n', 1)
    async with server.in_folder(tmp_path) as session:
        uri, advice = await _open_and_advise(session, "example.py", text)
        found = await session.eventually(uri, lambda ds: any(d.code == "JAX191" for d in ds))
        actions = await session.code_actions(uri, found, only=[types.CodeActionKind.QuickFix])
        [switch] = [a for a in actions if a.title.endswith("(keeps the same)")]
        assert switch.title == "jax-lsp (JAX191): Use save_only_these_names('mlpwi') (keeps the same)"
        assert not switch.is_preferred  # the same for this example: unsafe
        current = next(p for p in advice["policies"] if p["current"])
        assert "jax.checkpoint_policies.save_only_these_names('mlpwi')" in current["same_as"]
        assert "policy=jax.checkpoint_policies.save_only_these_names('mlpwi')  #" in session.apply(
            switch, uri
        )


LOCAL_REMAT3 = facts_for(installed_jax_version(None)).remat3


@pytest.mark.skipif(
    LOCAL_REMAT3 is None or "callable" not in LOCAL_REMAT3.ignored,
    reason="this JAX's new remat honours callable policies",
)
@pytest.mark.parametrize("server", ["vscode"], indirect=True)
async def test_a_name_the_new_remat_ignores_is_a_warning_without_a_fix(server, tmp_path):
    """Under jax_remat3 the advice is `unsupported`, yet the names the new remat ignores are
    JAX191 warnings; dropping one would change nothing, so no quick fix is offered."""
    text = (ADVISOR_FIXTURES / "new_remat.py").read_text(encoding="utf-8")
    text = text.replace('"x", "y")))\n', '"x", "y")))  # jax-lsp: example=new_remat.py:example\n', 1)
    async with server.in_folder(tmp_path) as session:
        uri, advice = await _open_and_advise(session, "new_remat.py", text)
        assert advice["error"]["status"] == "unsupported"
        found = await session.eventually(uri, lambda ds: any(d.code == "JAX191" for d in ds))
        [warning] = [d for d in found if d.code == "JAX191"]
        assert warning.message.startswith("'x' (saved): ignored under jax_remat3 on this release")
        actions = await session.code_actions(uri, [warning], only=[types.CodeActionKind.QuickFix])
        assert not any(a.title.startswith("jax-lsp (JAX191)") for a in actions)
        assert [a.title for a in actions] == ["Disable JAX191 for this line"]


@pytest.mark.parametrize("server", ["vscode"], indirect=True)
@pytest.mark.tpu
@needs_tpu
async def test_on_a_tpu_the_lens_shows_the_compiled_peak_for_the_chip(server, tmp_path):
    chip = local_target()
    async with server.in_folder(tmp_path) as session:  # the defaults
        uri = _model(session, _mlp())
        [lens] = await until(lambda: _advise_lenses(session, uri))
        result = await _execute(session, ADVISE, lens.command.arguments)
        assert result["platform"] == "cpu" and result["compile_target"]["name"] == chip.name
        assert all(p.get("error") is None for p in result["policies"]), result["policies"]

        async def compiled():
            found = await _advise_lenses(session, uri)
            return found if found and "compiled peak" in found[0].command.title else None

        [lens] = await until(compiled, 300)
        assert f"fits {chip.name}" in lens.command.title, lens.command.title
        print(lens.command.title)


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_hints_show_what_the_policy_saves_in_the_submodules_the_block_calls(server, tmp_path):
    """EasyLM's shape: `nn.remat(Block)` made in `setup`, the block calling an attention
    submodule of the file and an MLP of another. Each matmul the policy saves gets its hint on
    the attention's lines; the MLP's (another file) and what is kept whatever the policy (a
    layer's output, the next block's input) are counted on the site's line, never called saved
    where they are made."""
    pytest.importorskip("flax")
    shutil.copytree(ADVISOR_FIXTURES / "flax_submodules", tmp_path, dirs_exist_ok=True)
    text = (tmp_path / "model.py").read_text(encoding="utf-8")
    text = text.replace("checkpoint_dots)\n", "checkpoint_dots)  # jax-lsp: example=model.py:example\n")
    async with server.in_folder(tmp_path) as session:
        uri, result = await _open_and_advise(session, "model.py", text)
        assert result["policies"], result
        await until(lambda: _until_title(session, uri, lambda t: t.endswith("Compare policies")))
        hints = await _hints(session, uri)
    lines = text.split("\n")

    def line(needle):
        return next(i for i, written in enumerate(lines) if needle in written)

    by_line = {h.position.line: h for h in hints}
    site = line("nn.remat(Block")
    assert sorted(by_line) == sorted([line("# projections"), line("# scores"), line("# mixed"), site])
    assert by_line[line("# projections")].label == " saved f32[2,8,16] 1 KiB x4"  # q and k, two layers
    assert by_line[line("# scores")].label == " saved f32[2,8,8] 512 B x2"
    assert line("# the block's output") not in by_line  # the next block's input: kept, not saved
    assert by_line[site].label == " +2 saved in other files 4 KiB · 2 kept anyway 2 KiB"
    tooltip = by_line[site].tooltip
    assert isinstance(tooltip, types.MarkupContent)
    assert "made in other files (mlp.py:10)" in tooltip.value
    assert "2 arrays kept whatever the policy says, never saved by it, made at " in tooltip.value
    assert f"model.py:{line('# the block') + 1}" in tooltip.value


@pytest.mark.parametrize("server", ["neovim"], indirect=True)
async def test_an_example_keyed_in_pyproject_follows_its_site_across_edits(server, tmp_path):
    """A key by the function that holds the site, and a key by line, still name the site after
    lines are added above it; advised after the save, with the example the key gives."""
    text = _mlp(comment=False).replace(
        "block = jax.checkpoint(mlp,", "def make():\n    return jax.checkpoint(mlp,"
    )
    text += '\n\ndef made():\n    return {"fn": lambda *args: make()(*args), "args": example()}\n'
    line = next(i for i, written in enumerate(text.split("\n"), 1) if "policy=" in written)
    for key in ("mlp.py:make", f"mlp.py:{line}"):
        folder = tmp_path / key.replace(":", "-").replace(".", "-")
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[tool.jax-lsp.examples]\n"{key}" = "mlp.py:made"\n')
        async with server.in_folder(folder) as session:
            uri = _model(session, text)
            [lens] = await until(lambda uri=uri: _advise_lenses(session, uri))
            assert lens.command.title == "Advise policy", key
            session.change(uri, types.Position(0, 0), types.Position(0, 0), "# one\n# two\n")
            [moved] = await until(
                lambda uri=uri: _until_title(session, uri, lambda t: t.startswith("Advise policy"))
            )
            assert (moved.range.start.line, moved.command.title) == (line - 1 + 2, "Advise policy"), key
            (folder / "mlp.py").write_text(session.texts[uri], encoding="utf-8")
            session.client.text_document_did_save(
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
            )
            result = await _execute(session, ADVISE, moved.command.arguments)
            assert result["example"] == {"spec": "mlp.py:made"} and result["target"]["line"] == line + 2
            assert result["policies"], result
