"""A site whose policy a key chooses (a helper returning a table member, `getattr` of
`jax.checkpoint_policies`, a plain table): each candidate a key selects carries the key, the
key the example used is known, and the key's literal default in the project is found."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import Selector
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.setting import with_setting
from tests.agent import ADVISOR_FIXTURES, line_of, skip_where_agent_lacks_imports

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

POLICIES = "jax.checkpoint_policies."


def project(tmp_path: Path, *names: str) -> Path:
    """The fixtures ``names`` copied into a project of their own (the setting is searched there)."""
    for name in names:
        source = ADVISOR_FIXTURES / name
        if source.is_dir():
            shutil.copytree(source, tmp_path, dirs_exist_ok=True)
        else:
            shutil.copy(source, tmp_path / name)
    return tmp_path


def _advise(service, path: Path, needle: str, example: str) -> Advice:
    skip_where_agent_lacks_imports(path)
    advice = advise(service, path, line_of(path, needle), example=example, root=path.parent)
    assert advice.ok, advice.message
    return advice


def _keys(advice: Advice) -> dict[str, object]:
    return {p.policy: (p.select.key if p.select is not None else None) for p in advice.policies}


def test_a_helper_returning_a_table_member(service, tmp_path):
    root = project(tmp_path, "select_helper")
    advice = _advise(service, root / "model.py", "block = nn.remat", "model.py:example")
    assert advice.selector is not None
    assert advice.selector.expression == "self.config.remat_policy"
    assert advice.selector.current == "nothing_saveable"
    keys = _keys(advice)
    assert keys[POLICIES + "nothing_saveable"] == "nothing_saveable"
    assert keys[POLICIES + "dots_saveable"] == "checkpoint_dots"  # the table's alias of it
    assert keys[POLICIES + "dots_with_no_batch_dims_saveable"] == "checkpoint_dots_with_no_batch_dims"
    assert keys[POLICIES + "everything_saveable"] == "everything_saveable"
    assert keys[POLICIES + "offload_dot_with_no_batch_dims('device', 'pinned_host')"] is None
    assert advice.current.policy == POLICIES + "nothing_saveable"
    config = (root / "config.py").read_text(encoding="utf-8").splitlines()
    setting = advice.setting
    assert setting is not None and Path(setting.path) == (root / "config.py").resolve()
    assert setting.text == '"nothing_saveable"'
    assert config[setting.line - 1][setting.column : setting.end_column] == setting.text
    assert "remat_policy=" in config[setting.line - 1]


def test_getattr_of_checkpoint_policies_by_a_module_attribute(service, tmp_path):
    root = project(tmp_path, "select_getattr.py")
    advice = _advise(service, root / "select_getattr.py", "Block, prevent_cse", "select_getattr.py:example")
    assert advice.selector is not None and advice.selector.expression == "self.remat_policy"
    assert advice.selector.current == "nothing_saveable"
    keys = _keys(advice)
    assert keys[POLICIES + "dots_saveable"] == "dots_saveable"  # its own name before the alias
    assert keys[POLICIES + "nothing_saveable"] == "nothing_saveable"
    assert "checkpoint_dots" in advice.selector.keys
    assert advice.setting is not None and advice.setting.text == '"nothing_saveable"'
    line = (root / "select_getattr.py").read_text(encoding="utf-8").splitlines()[advice.setting.line - 1]
    assert line.strip() == 'remat_policy: str = "nothing_saveable"'


def test_a_plain_table_and_what_only_a_key_selects(service, tmp_path):
    root = project(tmp_path, "select_table.py")
    path = root / "select_table.py"
    advice = _advise(service, path, "jax.checkpoint(layer", "select_table.py:example")
    assert advice.selector is not None and advice.selector.expression == "cfg.remat"
    assert advice.selector.current == "full"
    keys = _keys(advice)
    assert keys[POLICIES + "nothing_saveable"] == "full"
    assert keys[POLICIES + "dots_saveable"] == "dots"
    assert keys[POLICIES + "everything_saveable"] is None
    assert keys["POLICIES['minimal']"] == "minimal"  # not a ready-made policy: a candidate too
    minimal = next(p for p in advice.policies if p.policy == "POLICIES['minimal']")
    assert minimal.error is None and minimal.residuals
    assert advice.setting is not None and advice.setting.text == '"full"'
    assert (
        path.read_text(encoding="utf-8").splitlines()[advice.setting.line - 1].strip()
        == 'remat: str = "full"'
    )

    other = _advise(service, path, "jax.checkpoint(layer", "select_table.py:example_dots")
    assert other.selector.current == "dots"  # the key the example's trace gave the site
    assert other.current.policy == POLICIES + "dots_saveable"
    assert other.current.select.key == "dots"


def test_a_plain_policy_has_no_key(service):
    path = ADVISOR_FIXTURES / "mlp.py"
    advice = advise(service, path, line_of(path), example="mlp.py:example", root=path.parent)
    assert advice.ok and advice.selector is None and advice.setting is None and advice.setting_note is None
    assert all(p.select is None for p in advice.policies)


def _selector_advice(current):
    return Advice("ok", "", "model.py", 3, selector=Selector("self.config.remat_policy", current, ("a", "b")))


def test_the_setting_is_one_literal_or_none_and_says_why(tmp_path):
    (tmp_path / "one.py").write_text("class A:\n    remat_policy: str = 'a'\n", encoding="utf-8")
    (tmp_path / "two.py").write_text("def make(remat_policy='b'):\n    pass\n", encoding="utf-8")
    (tmp_path / "other.py").write_text(
        "D = {'remat_policy': 'not a key'}\nE = dict(remat=1)\n", encoding="utf-8"
    )
    found = with_setting(_selector_advice(None), tmp_path)
    assert found.setting is None
    assert found.setting_note.startswith(
        "2 literal settings of remat_policy in the project (one.py:2, two.py:1)"
    )
    narrowed = with_setting(_selector_advice("b"), tmp_path)  # the key the example used decides
    assert (Path(narrowed.setting.path).name, narrowed.setting.line, narrowed.setting.text) == (
        "two.py",
        1,
        "'b'",
    )
    (tmp_path / "one.py").unlink()
    (tmp_path / "two.py").write_text("CONFIG = dict(remat_policy='a')\n", encoding="utf-8")
    assert with_setting(_selector_advice(None), tmp_path).setting.text == "'a'"
    (tmp_path / "two.py").unlink()
    none = with_setting(_selector_advice("a"), tmp_path)
    assert none.setting is None and none.setting_note.startswith("no literal default of remat_policy")


def test_the_setting_is_found_wherever_the_project_writes_the_default(tmp_path):
    """An attribute assignment (EasyLM's `config.remat_policy = '...'` on a ConfigDict), a
    keyword at a construction; a literal in the example's own file only where none is elsewhere."""
    advice = replace(_selector_advice("a"), example="examples/run.py:example")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run.py").write_text("UPDATES = {'remat_policy': 'a'}\n", encoding="utf-8")
    alone = with_setting(advice, tmp_path)
    assert (Path(alone.setting.path).name, alone.setting.text) == ("run.py", "'a'")
    for text, literal in (
        (
            "def get_default_config():\n    config = ConfigDict()\n    config.remat_policy = 'b'\n",
            (3, "'b'"),
        ),
        ("CONFIG = LLaMAConfig(hidden=8, remat_policy='b')\n", (1, "'b'")),
    ):
        (tmp_path / "config.py").write_text(text, encoding="utf-8")
        found = with_setting(advice, tmp_path)  # the example's literal is left out
        assert (Path(found.setting.path).name, found.setting.line, found.setting.text) == (
            "config.py",
            *literal,
        )
