"""Where a written policy goes (issue 46, item 4): a checkpoint without a policy gets `policy=`,
a site in a library gets it at the user's call that passes the policy, haliax's `Stacked` gets the
`ScanCheckpointPolicy` that makes it, and a site whose policy a preset name chooses gets no policy
edit, and says why; the tags are never put in the library's files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jax_lsp.core.text.edits import apply_edits
from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.user_call import UserCall
from jax_lsp.trace.advisor.write.site_edit import site_edits
from jax_lsp.trace.advisor.write.values import plan_tags
from jax_lsp.trace.advisor.write.writing import write_policy
from jax_lsp.trace.advisor.write.written import WRITTEN
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, AgentTraceService, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

POLICY = "jax.checkpoint_policies.save_only_these_names('h')"


def test_a_checkpoint_without_a_policy_gets_the_written_one(tmp_path: Path) -> None:
    text = (ADVISOR_FIXTURES / "write_stack.py").read_text(encoding="utf-8")
    default = text.replace(
        "jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)", "jax.checkpoint(layer)"
    )
    assert default != text
    path = tmp_path / "write_stack.py"
    path.write_text(default, encoding="utf-8")
    request = {"example": "write_stack.py:example", "root": tmp_path, "cwd": tmp_path}
    service = AgentTraceService()
    try:
        line = line_of(path, "jax.checkpoint(layer)")
        advice = advise(service, path, line, compile=True, **request)
        sizes = {p.policy: p.compiled.temp_bytes for p in advice.policies if p.compiled is not None}
        named = "jax.checkpoint_policies."
        dots, down = sizes[f"{named}dots_saveable"], sizes[f"{named}save_only_these_names('down')"]
        budget = down + 3 * (dots - down) // 4  # as test_write_policy's: room for one more matmul
        outcome = write_policy(service, Workspace([tmp_path]), advice, budget, **request)
        assert outcome.verdict == WRITTEN, outcome.message
        assert outcome.entry is not None and outcome.entry.compiled is not None
        edited = apply_edits(default, outcome.edits)
        assert f"jax.checkpoint(layer, policy={outcome.entry.policy})" in edited
        path.write_text(edited, encoding="utf-8")
        again = advise(service, path, line_of(path, "jax.checkpoint(layer,"), compile=True, **request)
        current = again.current
        assert current is not None and current.compiled is not None
        assert current.policy == outcome.entry.policy
        assert current.compiled.temp_bytes == outcome.entry.compiled.temp_bytes
    finally:
        service.shutdown()


def test_a_site_in_a_library_is_written_at_the_users_call(tmp_path: Path) -> None:
    shutil.copytree(ADVISOR_FIXTURES / "library_site", tmp_path, dirs_exist_ok=True)
    installed = tmp_path / "site-packages"  # stacklib as an installed package
    site = installed / "stacklib" / "blocks.py"
    service = AgentTraceService()
    try:
        line = line_of(site, "jax.checkpoint(block, policy=policy)")
        example = "user_model.py:direct_example"
        advice = advise(
            service, site, line, example=example, root=tmp_path, cwd=tmp_path, import_root=installed
        )
        assert advice.ok and advice.user_call is not None, advice.message
        edits, note = site_edits(Workspace([tmp_path]), advice, None, ["h"], [], POLICY)
        assert note is None
        [edit] = edits
        assert Path(edit.path).name == "user_model.py"
        user = (tmp_path / "user_model.py").read_text(encoding="utf-8")
        assert f"remat_block(layer, policy={POLICY})" in apply_edits(user, edits)
        # the values the policy may keep are the user's: none is tagged in the library's files
        answer = service.submit(
            "advise",
            {
                "path": str(site),
                "line": line,
                "column": None,
                "root": str(tmp_path),
                "source": None,
                "import_root": str(installed),
                "example": example,
                "cwd": str(tmp_path),
                "policies": ["jax.checkpoint_policies.everything_saveable"],
            },
            TraceOptions(),
            interpreter=None,
            cwd=str(tmp_path),
            answer=lambda a: a,
        ).future.result()
        plan = plan_tags(answer, str(tmp_path))
        added = [g for g in plan.groups if g.added]
        assert added and all(Path(g.path or "").name == "user_model.py" for g in added)
    finally:
        service.shutdown()


def test_a_preset_name_gets_the_tags_but_no_policy_edit(tmp_path: Path) -> None:
    shutil.copy(ADVISOR_FIXTURES / "select_table.py", tmp_path)
    path = tmp_path / "select_table.py"
    service = AgentTraceService()
    try:
        advice = advise(
            service,
            path,
            line_of(path, "jax.checkpoint(layer, policy=POLICIES["),
            example="select_table.py:example",
            root=tmp_path,
        )
        assert advice.ok and advice.selector is not None, advice.message
        edits, note = site_edits(Workspace([tmp_path]), advice, None, ["hidden"], [], POLICY)
        assert edits == [] and note is not None and "preset name" in note and "cfg.remat" in note
    finally:
        service.shutdown()


def haliax_call(callee: str) -> UserCall:
    return UserCall("model.py", 40, 50, 40, 61, "gradient_checkpointing", '"recompute"', callee, False)


def test_haliax_stacked_gets_the_config_value_that_makes_the_policy() -> None:
    from jax_lsp.trace.advisor.write.site_edit import _user_call_edits

    kept = ["scan(layers)__carry", "up", "norm"]
    edits, note = _user_call_edits(haliax_call("hnn.Stacked.init"), kept, ["down"], "unused")
    assert note is None
    [edit] = edits
    assert edit.new_text == (
        "hnn.ScanCheckpointPolicy(save_carries=True, save_inputs=False, save_block_internals=['up', 'norm'], "
        "offload_block_internals=['down'])"
    )
    edits, note = _user_call_edits(haliax_call("make_stack"), kept, [], "unused")
    assert edits == [] and note is not None and "gradient_checkpointing" in note


def test_import_jax_goes_with_a_policy_written_where_jax_is_not_bound(tmp_path: Path) -> None:
    """A policy written into griffin.py's kind of module (`jax.numpy as jnp` alone) brings `import
    jax`; haliax's config value, written instead of a policy, reads no `jax.` and brings none."""
    from jax_lsp.core.findings import Edit, Position, Span
    from jax_lsp.trace.advisor.sites import importing_jax

    path = tmp_path / "model.py"
    text = '"""Model."""\nimport jax.numpy as jnp\nimport haliax.nn as hnn\nB = make(policy=None)\n'
    path.write_text(text, encoding="utf-8")
    at = Span(Position(3, 16), Position(3, 20))
    workspace = Workspace([tmp_path])
    edited = apply_edits(text, importing_jax(workspace, [Edit(str(path), at, POLICY)], POLICY))
    assert (
        edited
        == f'"""Model."""\nimport jax\nimport jax.numpy as jnp\nimport haliax.nn as hnn\nB = make(policy={POLICY})\n'
    )
    compile(edited, "model.py", "exec")
    config = "hnn.ScanCheckpointPolicy(save_carries=True, save_inputs=False, save_block_internals=['h'])"
    assert importing_jax(workspace, [Edit(str(path), at, config)], POLICY) == [Edit(str(path), at, config)]
