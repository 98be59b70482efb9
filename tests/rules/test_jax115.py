"""JAX115: callable policies under JAX's new remat, turned on anywhere in the project or assumed
by the `new-remat` setting."""

from __future__ import annotations

import ast
import random

import pytest

from jax_lsp.core import Settings
from jax_lsp.core.config import SettingsError, settings_from_mapping
from jax_lsp.core.policies import new_remat
from jax_lsp.core.policies.new_remat import could_turn_on, switches_in
from jax_lsp.engine import Workspace

MODEL = """import jax
import jax.numpy as jnp

cp = jax.checkpoint_policies


def save_dots(prim, *avals, **params):
    return prim.name == "dot_general"


f = jax.checkpoint(lambda y: jnp.sin(y @ y) @ y, policy=save_dots)
g = jax.checkpoint(lambda y: y, policy=cp.save_from_both_policies(cp.dots_saveable, save_dots))
h = jax.checkpoint(lambda y: y, policy=cp.save_only_these_names("a"))
"""


def _jax115(tmp_path, files: dict[str, str], settings: Settings | None = None) -> list[tuple[int, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    workspace = Workspace([tmp_path], settings)
    found = workspace.check_file(tmp_path / "model.py")
    return [(f.span.start.line + 1, f.message) for f in found if f.code == "JAX115"]


def test_a_switch_in_another_module_reports_every_callable_policy(tmp_path):
    found = _jax115(
        tmp_path, {"model.py": MODEL, "train.py": 'import jax\njax.config.update("jax_remat3", True)\n'}
    )
    assert [line for line, _ in found] == [11, 12]
    assert all(f"turned on by {tmp_path / 'train.py'}:2" in message for _, message in found)
    assert "a policy written as a function" in found[0][1]
    assert "`save_from_both_policies(...)`" in found[1][1]


def test_no_switch_no_finding_and_the_setting_reports_anyway(tmp_path):
    assert _jax115(tmp_path, {"model.py": MODEL}) == []
    off = 'import jax\njax.config.update("jax_remat3", False)\n'
    assert _jax115(tmp_path, {"model.py": MODEL, "train.py": off}) == []
    always = settings_from_mapping({"new-remat": "always"})
    found = _jax115(tmp_path, {"model.py": MODEL, "train.py": off}, always)
    assert [line for line, _ in found] == [11, 12]
    assert 'the setting `new-remat = "always"`' in found[0][1]


def test_the_setting_takes_known_modes_only():
    with pytest.raises(SettingsError, match="`new-remat` must be one of detect, always"):
        settings_from_mapping({"new-remat": "yes"})


def test_a_switch_found_after_the_first_check_is_seen(tmp_path):
    workspace = Workspace([tmp_path])
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    assert not [f for f in workspace.check_file(tmp_path / "model.py") if f.code == "JAX115"]
    workspace.set_document(tmp_path / "train.py", 'import os\nos.environ["JAX_REMAT3"] = "true"\n')
    assert len([f for f in workspace.check_file(tmp_path / "model.py") if f.code == "JAX115"]) == 2


@pytest.mark.parametrize(
    "source, switches",
    [
        ('jax.config.update("jax_remat3", True)', 1),
        ('config.update("jax_remat3", 1)', 1),
        ('jax.config.update("jax_remat3", False)', 0),
        ('jax.config.update("jax_remat", True)', 0),
        ('os.environ["JAX_REMAT3"] = "1"', 1),
        ('os.environ["JAX_REMAT3"] = "0"', 0),
        ('os.environ.setdefault("JAX_REMAT3", "yes")', 1),
        ('os.environ.update({"JAX_REMAT3": "True"})', 1),
        ('os.environ.update(JAX_REMAT3="on")', 1),
        ("with config.remat3(True):\n    pass", 0),  # for its block alone (JAX's own tests)
        ("@jtu.with_config(jax_remat3=True)\nclass T:\n    pass", 0),
        ("jax.remat3(f)", 0),
        ('def main():\n    jax.config.update("jax_remat3", True)', 1),
    ],
)
def test_the_ways_a_project_turns_the_new_remat_on(source, switches):
    assert len(switches_in(ast.parse(source), source)) == switches
    if switches:  # the byte search lets every file with a switch through
        assert could_turn_on(source.encode())


@pytest.mark.parametrize(
    "source",
    [
        "remat3 = config.bool_flag(default=False)",
        "with config.remat3(True):\n    pass",
        "@jtu.with_config(jax_remat3=True)\ndef test(self):\n    pass",
        "# JAX_REMAT3 is read at import",
    ],
)
def test_a_file_that_only_names_the_new_remat_is_not_parsed_for_switches(source):
    assert not could_turn_on(source.encode())


def test_the_byte_search_tries_its_expression_only_where_the_flag_is_named():
    """Where the flag's name is, it answers as the expression searched over the whole file."""
    pieces = [
        '"',
        "'",
        "--",
        '"--',
        "jax_",
        "JAX_",
        "jax_remat3",
        "JAX_REMAT3",
        "remat3",
        "REMAT3",
        " ",
        "=",
        "==",
        "x",
    ]
    chooser = random.Random(0)
    for _ in range(20_000):
        data = "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 7))).encode()
        assert could_turn_on(data) == (new_remat._SWITCH_BYTES.search(data) is not None), data


def test_a_switch_deep_in_a_large_module_is_found():
    source = "\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(300))
    source += '\nclass Run:\n    def main(self):\n        if True:\n            os.environ.update(\n                JAX_REMAT3="1")\n'
    (switch,) = switches_in(ast.parse(source), source)
    assert isinstance(switch, ast.Call) and switch.lineno == source.count("\n") - 1


def test_a_switch_added_in_another_file_reaches_a_cached_check(tmp_path):
    from jax_lsp.engine.batch import check_paths

    # No names policy: the tag index, which depends on every file too, is never asked.
    model = 'import jax\n\n\ndef save_dots(prim, *_, **__):\n    return prim.name == "dot_general"\n\n\n'
    (tmp_path / "model.py").write_text(model + "f = jax.checkpoint(g, policy=save_dots)\n", encoding="utf-8")
    (tmp_path / "train.py").write_text("import os\n", encoding="utf-8")
    cache = tmp_path / "cache"

    def jax115() -> int:
        found = check_paths(Workspace([tmp_path]), [tmp_path], cache)
        return len([f for f in found.get(str(tmp_path / "model.py"), []) if f.code == "JAX115"])

    assert jax115() == 0
    (tmp_path / "train.py").write_text('import os\nos.environ["JAX_REMAT3"] = "1"\n', encoding="utf-8")
    assert jax115() == 1
    (tmp_path / "train.py").write_text('import os\nos.environ["JAX_REMAT3"] = "0"\n', encoding="utf-8")
    assert jax115() == 0


@pytest.mark.parametrize(
    "source",
    [
        'import jax\nü = 1; jax.config.update("jax_remat3", True)\n',
        "class Run:\n    def main(self):\n        os.environ.update(\n            JAX_REMAT3='1')\n",
        'DOC = """\nx = 1\n"""\nos.environ["JAX_REMAT3"] = "1"\n',  # `x = 1` looks like a statement
        'jax.config.update("jax_remat3", False)\n',
    ],
)
def test_a_switch_is_placed_as_a_whole_parse_places_it(source):
    from jax_lsp.core.policies.new_remat import first_switch
    from jax_lsp.core.text.source import parse_text

    whole = parse_text(source, "m.py")
    switches = switches_in(whole.tree, source)
    assert first_switch(source, "m.py") == (whole.span(switches[0]) if switches else None)


def test_the_server_does_not_list_the_project_again_for_each_site(tmp_path, monkeypatch):
    # The dependency on every file is for the batch's result cache; an editor's check of a
    # module with many callable-policy sites must not walk the project again for each.
    from jax_lsp.engine import project_files

    walks = []
    real = project_files.discover_names
    monkeypatch.setattr(project_files, "discover_names", lambda *a, **k: walks.append(1) or real(*a, **k))
    (tmp_path / "train.py").write_text('import os\nos.environ["JAX_REMAT3"] = "1"\n', encoding="utf-8")

    def walks_for(sites: int) -> int:
        walks.clear()
        extra = "".join(f"f{n} = jax.checkpoint(g, policy=save_dots)\n" for n in range(sites))
        (tmp_path / "model.py").write_text(MODEL + extra, encoding="utf-8")
        found = Workspace([tmp_path]).check_file(tmp_path / "model.py")
        assert len([f for f in found if f.code == "JAX115"]) == 2 + sites
        return len(walks)

    assert walks_for(0) == walks_for(6)
