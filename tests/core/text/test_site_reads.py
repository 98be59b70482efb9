"""The users search's text closure (core/text/site_reads.py) against the resolver it stands for:
each file whose sites really reach the named module's policy is kept, and files whose sites
cannot are left out without being parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from jax_lsp.core.policies.resolve import PolicyFunction
from jax_lsp.engine import Workspace
from jax_lsp.engine.users import Exported, UserSearch

TARGET = "def p(prim, *_, **__):\n    return True\n\n\ndef helper():\n    return 1\n"

REACHING = {
    "direct": "import jax\nfrom pol import p\nf = jax.checkpoint(g, policy=p)\n",
    "module-level name": (
        "import jax\nfrom pol import p\nchosen = p\n\n\ndef run(g):\n    return jax.checkpoint(g, policy=chosen)\n"
    ),
    "factory in another statement": (
        "import jax\nimport pol\n\n\ndef make():\n    return pol.p\n\n\n"
        "class T:\n    def test(self):\n        return jax.checkpoint(g, policy=make())\n"
    ),
    "class attribute": (
        "import jax\nfrom pol import p\n\n\nclass Cfg:\n    POLICY = p\n\n\n"
        "class T:\n    def other(self):\n        pass\n\n"
        "    def test(self):\n        return jax.checkpoint(g, policy=Cfg.POLICY)\n"
    ),
    "class-level site and name": (
        "import jax\nfrom pol import p\n\n\nclass M:\n    chosen = p\n\n"
        "    def other(self):\n        pass\n\n    f = jax.checkpoint(g, policy=chosen)\n"
    ),
    "inside an if at module level": (
        "import jax\nimport pol\n\nif True:\n    chosen = pol.p\n\n\n"
        "def run(g):\n    return jax.checkpoint(g, policy=chosen)\n"
    ),
}

NOT_REACHING = {
    "another method uses the module": (
        "import jax\nimport pol\n\n\nclass T:\n"
        "    def test(self):\n        return jax.checkpoint(g, policy=jax.checkpoint_policies.nothing_saveable)\n\n"
        "    def test_other(self):\n        return pol.p\n"
    ),
    "a comment names it": (
        "import jax\nimport pol\n\n# pol.p saves everything\n"
        "f = jax.checkpoint(g, policy=jax.checkpoint_policies.dots_saveable)\n"
    ),
    "a helper that is no policy": (
        "import jax\nfrom pol import helper\n\nn = helper()\nf = jax.checkpoint(g, policy=jax.checkpoint_policies.dots_saveable)\n"
    ),
}


def _search(tmp_path: Path) -> UserSearch:
    target = tmp_path / "pol.py"
    return UserSearch({}, [Exported("pol", target, frozenset({"p", "helper"}))], lambda path: path.stem)


@pytest.fixture(autouse=True)
def _target(tmp_path: Path) -> None:
    (tmp_path / "pol.py").write_text(TARGET)


def _reaches(tmp_path: Path, user: Path) -> bool:
    workspace = Workspace([tmp_path])
    module = workspace.load(user)
    assert module is not None
    return any(
        isinstance(t, PolicyFunction) and t.module.path.endswith("pol.py")
        for _, targets in workspace.sites(module)
        for t in targets
    )


@pytest.mark.parametrize("name", sorted(REACHING))
def test_a_file_whose_site_reaches_the_module_is_a_user(tmp_path, name):
    user = tmp_path / "user.py"
    user.write_text(REACHING[name])
    assert _reaches(tmp_path, user)  # what the resolver does: the closure must keep the file
    assert _search(tmp_path).is_user(user, user.read_bytes())


@pytest.mark.parametrize("name", sorted(NOT_REACHING))
def test_a_file_whose_sites_cannot_reach_the_module_is_not_parsed(tmp_path, name):
    user = tmp_path / "user.py"
    user.write_text(NOT_REACHING[name])
    assert not _search(tmp_path).is_user(user, user.read_bytes())
    assert not _reaches(tmp_path, user)


def test_a_call_of_an_alias_is_a_site_though_no_trigger_is_on_its_line(tmp_path):
    user = tmp_path / "user.py"
    user.write_text(
        "import jax\nimport pol\nckpt = jax.checkpoint\n\n\ndef run(g):\n    return ckpt(g, pol.p)\n"
    )
    assert _search(tmp_path).is_user(user, user.read_bytes())
    assert _reaches(tmp_path, user)


CUT_INSIDE_A_STRING = (
    'import jax\nimport pol\n\n\ndef make():\n    doc = """\ndef helper2():\n    {}\n"""\n    return 1\n\n\n'
    "f = jax.checkpoint(g, policy=make())\n"
)


def test_a_statement_cut_inside_a_string_keeps_the_file(tmp_path):
    # The line `def helper2():` inside the string starts a statement for a text search: the
    # pieces do not close, and a file that writes `pol.p` somewhere is kept rather than
    # guessed about.
    user = tmp_path / "user.py"
    user.write_text(CUT_INSIDE_A_STRING.format("pol.p"))
    assert _search(tmp_path).is_user(user, user.read_bytes())


def test_a_file_that_writes_none_of_the_names_is_no_user_though_a_statement_is_cut(tmp_path):
    # `pol` is written in its import alone (and inside `policy`): no statement, however the
    # text is cut, writes `p`, `helper`, `pol.p` or `pol.helper`.
    user = tmp_path / "user.py"
    user.write_text(CUT_INSIDE_A_STRING.format("pass"))
    assert not _search(tmp_path).is_user(user, user.read_bytes())
    assert not _reaches(tmp_path, user)
