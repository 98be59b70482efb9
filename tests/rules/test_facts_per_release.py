"""Rules speak for the JAX installed for the project: its release's facts decide what is a
mistake (jax_lsp/core/jax_facts.json), and messages name the release."""

from __future__ import annotations

from jax_lsp.core.jax_facts import facts_for
from jax_lsp.engine import Workspace

SAVE_FROM_BOTH = """import jax
from jax.ad_checkpoint import Recompute, Saveable

cp = jax.checkpoint_policies


def mine(prim, *avals, **params):
    return Saveable if prim.name == "sin" else Recompute


f = jax.checkpoint(lambda x: x, policy=cp.save_from_both_policies(cp.dots_saveable, mine))
"""
OFFLOAD_TO_HOST = """import jax
from jax.ad_checkpoint import Offloadable


def p(prim, *avals, **params):
    return Offloadable(src="device", dst="host")


f = jax.checkpoint(lambda x: x, policy=p)
"""
MEMBERS = """import jax

cp = jax.checkpoint_policies
a = jax.checkpoint(lambda x: x, policy=cp.SaveOnlyTheseNames)
b = jax.checkpoint(lambda x: x, policy=cp.save_anything_except_these_names("big"))
"""


def _codes(tmp_path, text: str, release: str | None) -> list[tuple[str, str]]:
    path = tmp_path / "model.py"
    path.write_text(text, encoding="utf-8")
    workspace = Workspace([tmp_path])
    if release is not None:  # as if the project's interpreter held that release
        workspace.jax_facts = lambda: facts_for(release)  # type: ignore[method-assign]
    return [(f.code, f.message) for f in workspace.check_file(path)]


def test_save_from_both_accepts_any_decision_before_0_4_38(tmp_path):
    assert [c for c, _ in _codes(tmp_path, SAVE_FROM_BOTH, "0.4.38")].count("JAX110") == 2
    assert "JAX110" not in [c for c, _ in _codes(tmp_path, SAVE_FROM_BOTH, "0.4.37")]


def test_memory_kinds_are_mapped_by_jax_from_0_7_1(tmp_path):
    assert "JAX105" in [c for c, _ in _codes(tmp_path, OFFLOAD_TO_HOST, "0.7.1")]
    assert "JAX105" not in [c for c, _ in _codes(tmp_path, OFFLOAD_TO_HOST, "0.7.0")]


def test_members_and_saving_everything_follow_the_release(tmp_path):
    newest = dict(_codes(tmp_path, MEMBERS, "0.12.0.1"))
    assert "has no `SaveOnlyTheseNames` in jax 0.12.0.1 (it is in jax 0.11.0-0.11.2)" in newest["JAX113"]
    assert newest["JAX114"].startswith("In jax 0.12.0.1, `save_anything_except_these_names` ignores")
    in_0_11 = [c for c, _ in _codes(tmp_path, MEMBERS, "0.11.1")]
    assert "JAX113" not in in_0_11 and "JAX114" in in_0_11
    assert [c for c, _ in _codes(tmp_path, MEMBERS, "0.10.1")] == ["JAX113"]  # it honoured its names then


def test_the_new_remat_is_reported_where_the_release_ignores_callables(tmp_path):
    text = 'import jax\njax.config.update("jax_remat3", True)\n\n\ndef p(prim, *a, **k):\n    return False\n\n\nf = jax.checkpoint(lambda x: x, policy=p)\n'
    found = dict(_codes(tmp_path, text, "0.11.2"))
    assert found["JAX115"].startswith("In jax 0.11.2, the new remat")
    assert "JAX115" not in dict(_codes(tmp_path, text, "0.12.0"))
    assert "JAX115" not in dict(_codes(tmp_path, text, "0.10.1"))  # no new remat yet
