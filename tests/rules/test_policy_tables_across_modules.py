"""A policy table's members are checked in the table's module, whatever module looks it up and
however (a literal key, a helper, a run-time key): one finding per member and rule, at the
member, by every road a check takes (the indexed workspace, a whole tree, a named file)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jax_lsp.core import Settings
from jax_lsp.engine import Workspace
from jax_lsp.engine.batch import check_part, check_paths
from tests.rules.site_rules import grad_of_f

# A faithful copy of the pattern: a table of `jax.checkpoint_policies` members with an
# uncalled factory, a `pick(name)` helper, and the training module selecting a working key.
POLICIES = """
import jax

cp = jax.checkpoint_policies


def returns_number(prim, *avals, **params):
    return 1


MIXED = dict(
    nothing_saveable=cp.nothing_saveable,
    save_only_these_names=cp.save_only_these_names,
    numbers=returns_number,
    dots=cp.dots_saveable,
)


def pick(name):
    return MIXED[name]
"""

TRAIN = """
import jax
import jax.numpy as jnp

from policies import MIXED, pick

f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy={lookup})
"""

# (code, the line of the table's entry it is at, the key in its note)
AT_MEMBERS = [
    ("JAX103", "return 1", "numbers"),
    ("JAX107", "save_only_these_names=", "save_only_these_names"),
]


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(textwrap.dedent(POLICIES).splitlines()) if needle in text)


def _project(tmp_path: Path, *lookups: str) -> Path:
    (tmp_path / "policies.py").write_text(textwrap.dedent(POLICIES))
    for number, lookup in enumerate(lookups):
        (tmp_path / f"train{number}.py").write_text(textwrap.dedent(TRAIN.format(lookup=lookup)))
    return tmp_path / "policies.py"


def _by_road(tmp_path: Path, table: Path) -> dict[str, list]:
    workspace = Workspace([tmp_path], Settings())
    workspace.index()
    return {
        "indexed workspace": workspace.check_file(table),
        "whole tree": check_paths(Workspace([tmp_path], Settings()), [tmp_path]).get(str(table), []),
        "named file": check_part(Workspace([tmp_path], Settings()), [str(table)]).get(str(table), []),
    }


def _at_members(found: list) -> list[tuple[str, int, str]]:
    return sorted((f.code, f.span.start.line, f.message) for f in found)


@pytest.mark.parametrize(
    "lookups",
    [
        ['pick("nothing_saveable")'],
        ['MIXED["dots"]'],
        ['MIXED.get("dots", jax.checkpoint_policies.nothing_saveable)'],
        ["pick(REMAT)"],
        ['pick("nothing_saveable")', "MIXED[REMAT]", 'pick("dots")'],
    ],
    ids=["helper-literal-key", "literal-key", "get", "run-time-key", "three-lookups-two-modules"],
)
def test_each_broken_member_is_reported_once_at_the_member(lookups, tmp_path):
    table = _project(tmp_path, *lookups)
    for road, found in _by_road(tmp_path, table).items():
        assert [(code, line) for code, line, _ in _at_members(found)] == [
            (code, _line(needle)) for code, needle, _ in AT_MEMBERS
        ], road
        for (_, _, message), (_, _, key) in zip(_at_members(found), AT_MEMBERS):
            assert f"(chosen by the key '{key}' of `MIXED`" in message, road


def test_the_key_used_today_runs_and_each_reported_member_raises_when_chosen():
    site = 'f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=pick("{key}"))\n'
    module = POLICIES + "import jax.numpy as jnp\n"
    grad_of_f(module + site.format(key="nothing_saveable"))
    for key, error in [
        ("save_only_these_names", "unexpected keyword argument"),
        ("numbers", "Value returned by a remat policy should be a bool"),
    ]:
        with pytest.raises(TypeError, match=error):
            grad_of_f(module + site.format(key=key))


def test_the_module_that_selects_a_working_key_has_no_finding(tmp_path):
    _project(tmp_path, 'pick("nothing_saveable")')
    train = tmp_path / "train0.py"
    assert check_part(Workspace([tmp_path], Settings()), [str(train)]).get(str(train), []) == []


def test_a_table_nobody_looks_up_is_not_checked(tmp_path):
    """A dict is a policy table only where a lookup hands its members to JAX: one whose
    factories are called after the lookup (`FACTORIES[name](...)`) is right."""
    table = _project(tmp_path, 'pick("nothing_saveable")')
    (tmp_path / "train0.py").unlink()
    assert all(found == [] for found in _by_road(tmp_path, table).values())
