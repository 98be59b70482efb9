"""A table of policies looked up with a key unknown statically: every member is a candidate."""

from __future__ import annotations

import textwrap

import pytest

from jax_lsp.core import Settings
from jax_lsp.engine import Workspace, analyze_text
from tests.rules.site_rules import anchored_text, grad_of_f

# Both tables' start: ready-made policies, an uncalled factory, a name, then a member that is
# not a policy (`bad_one`) among their own.
TABLE_START = """
import jax
import jax.numpy as jnp

cp = jax.checkpoint_policies


def bad_one(prim, *avals, **params):
    return 1


POLICIES = dict(
    nothing_saveable=cp.nothing_saveable,
    save_only_these_names=cp.save_only_these_names,
    by_name="dots_saveable",
"""
TABLE = f"""{TABLE_START}    everything=cp.everything_saveable(),
    falls=lambda prim, *a, **k: None,
    numbers=bad_one,
    fine=cp.save_from_both_policies(cp.dots_saveable, cp.nothing_saveable),
)


def get_policy(name):
    return POLICIES[name]

"""
SITE = "f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=get_policy(REMAT))\n"


def _findings(code: str, tmp_path, name: str = "m.py"):
    return analyze_text(textwrap.dedent(code), str(tmp_path / name), Settings())


def _entry_line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if line.strip().startswith(needle))


def test_every_member_that_could_never_work_is_reported_at_its_entry_with_its_key(tmp_path):
    code = TABLE + SITE
    found = {(f.code, f.span.start.line): f for f in _findings(code, tmp_path)}
    expected = {
        ("JAX107", _entry_line(code, "save_only_these_names=")): "'save_only_these_names'",
        ("JAX111", _entry_line(code, "by_name=")): "'by_name'",
        ("JAX106", _entry_line(code, "everything=")): "'everything'",
        ("JAX101", _entry_line(code, "falls=")): "'falls'",
        ("JAX103", _entry_line(code, "return 1")): "'numbers'",
    }
    assert set(found) == set(expected)
    for place, key in expected.items():
        assert f"(chosen by the key {key} of `POLICIES`)" in found[place].message


@pytest.mark.parametrize(
    "key, error",
    [
        ("save_only_these_names", "unexpected keyword argument"),
        ("by_name", "'str' object is not callable"),
        ("everything", "'bool' object is not callable"),
        ("falls", "Value returned by a remat policy should be a bool"),
        ("numbers", "Value returned by a remat policy should be a bool"),
    ],
)
def test_each_reported_member_fails_under_jax_when_its_key_is_chosen(key, error):
    with pytest.raises(TypeError, match=error):
        grad_of_f(TABLE + f"REMAT = {key!r}\n" + SITE)


@pytest.mark.parametrize("key", ["nothing_saveable", "fine"])
def test_the_valid_members_run(key):
    grad_of_f(TABLE + f"REMAT = {key!r}\n" + SITE)


def test_a_table_of_valid_policies_gives_nothing(tmp_path):
    code = """
    import functools

    import jax

    cp = jax.checkpoint_policies


    def mine(prim, *avals, **params):
        return prim.name == "sin"


    POLICIES = {
        "none": None,
        "dots": cp.dots_saveable,
        "names": cp.save_only_these_names("x"),
        "mine": mine,
        "both": cp.save_from_both_policies(cp.dots_saveable, mine),
    }
    f = jax.checkpoint(abs, policy=POLICIES[NAME])
    g = functools.partial(jax.checkpoint, policy=POLICIES.get(NAME, cp.nothing_saveable))
    h = jax.checkpoint(abs, policy=getattr(jax.checkpoint_policies, NAME))
    """
    assert _findings(code, tmp_path) == []


def test_dict_get_with_a_default_and_a_config_dict_that_holds_no_policy(tmp_path):
    code = """
    import jax

    CONFIG = {"lr": 0.1, "remat": "dots", "layers": [1, 2]}
    POLICIES = {"dots": jax.checkpoint_policies.dots_saveable, "names": jax.checkpoint_policies.save_only_these_names}
    f = jax.checkpoint(abs, policy=CONFIG[KEY])
    g = jax.checkpoint(abs, policy=POLICIES.get(KEY, jax.checkpoint_policies.nothing_saveable))
    """
    [finding] = _findings(code, tmp_path)
    assert (finding.code, anchored_text(code, finding)) == (
        "JAX107",
        "jax.checkpoint_policies.save_only_these_names",
    )
    assert "chosen by the key 'names' of `POLICIES`" in finding.message


def test_a_table_in_another_module_is_reported_at_the_site_with_where_the_entry_is(tmp_path):
    (tmp_path / "policies.py").write_text(textwrap.dedent(TABLE))
    code = """
    import jax
    import jax.numpy as jnp
    from policies import POLICIES, get_policy

    f = jax.checkpoint(lambda x: x, policy=get_policy(REMAT))
    g = jax.checkpoint(lambda x: x, policy=POLICIES[REMAT])
    """
    found = _findings(code, tmp_path, "model.py")
    site_rules = sorted((f.code, f.span.start.line + 1) for f in found)
    assert site_rules == [("JAX107", 6), ("JAX107", 7), ("JAX111", 6), ("JAX111", 7)]
    entry = _entry_line(textwrap.dedent(TABLE), "save_only_these_names=") + 1
    jax107 = next(f for f in found if f.code == "JAX107")
    assert (
        f"(chosen by the key 'save_only_these_names' of `POLICIES` in policies.py:{entry})" in jax107.message
    )
    # With the workspace indexed, the table's module reports every broken member it holds at the
    # member, with the key.
    (tmp_path / "model.py").write_text(textwrap.dedent(code))
    workspace = Workspace([tmp_path])
    workspace.index()
    in_table = {f.code: f.message for f in workspace.check_file(tmp_path / "policies.py")}
    assert sorted(in_table) == ["JAX101", "JAX103", "JAX106", "JAX107", "JAX111"]
    assert "(chosen by the key 'by_name' of `POLICIES`)" in in_table["JAX111"]
    assert "(chosen by the key 'falls' of `POLICIES`)" in in_table["JAX101"]
    assert "(chosen by the key 'numbers' of `POLICIES`)" in in_table["JAX103"]


HELPERS = f"""{TABLE_START}    also_names=cp.save_any_names_but_these,
    numbers=bad_one,
    more_numbers=bad_one,
)


def get_policy(name):
    return POLICIES[name]


def by_default(name="by_name"):
    return POLICIES[name]


def through(name):
    return get_policy(name)


def or_dots(name):
    return POLICIES.get(name, cp.dots_saveable)


def rebound(name):
    name = name.upper()
    return POLICIES[name]
"""


@pytest.mark.parametrize(
    "call, expected",
    [
        ('get_policy("nothing_saveable")', []),
        ('through("nothing_saveable")', []),
        ('or_dots("missing")', []),
        ('get_policy("missing")', []),
        ('get_policy(name="by_name")', ["JAX111"]),
        ("by_default()", ["JAX111"]),
        ('through("save_only_these_names")', ["JAX107"]),
        ('rebound("nothing_saveable")', ["JAX107", "JAX111"]),
    ],
)
def test_a_literal_key_given_to_a_helper_selects_its_member_only(tmp_path, call, expected):
    (tmp_path / "policies.py").write_text(textwrap.dedent(HELPERS))
    code = f"""
    import jax
    from policies import by_default, get_policy, or_dots, rebound, through

    f = jax.checkpoint(abs, policy={call})
    """
    found = _findings(code, tmp_path, "model.py")
    assert sorted(f.code for f in found) == expected
    assert all("chosen by" not in f.message for f in found if call != 'rebound("nothing_saveable")')


def test_the_member_a_literal_key_selects_runs_or_fails_under_jax():
    grad_of_f(HELPERS + 'f = jax.checkpoint(jax.numpy.sin, policy=through("nothing_saveable"))\n')
    grad_of_f(HELPERS + 'f = jax.checkpoint(jax.numpy.sin, policy=or_dots("missing"))\n')
    with pytest.raises(TypeError, match="'str' object is not callable"):
        grad_of_f(HELPERS + 'f = jax.checkpoint(jax.numpy.sin, policy=get_policy(name="by_name"))\n')
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        grad_of_f(HELPERS + 'f = jax.checkpoint(jax.numpy.sin, policy=get_policy("also_names"))\n')


def test_a_literal_key_selecting_a_broken_member_of_a_table_in_the_file_is_reported_at_the_entry(
    tmp_path,
):
    code = HELPERS + 'f = jax.checkpoint(abs, policy=get_policy("by_name"))\n'
    [finding] = _findings(code, tmp_path)
    assert (finding.code, finding.span.start.line) == ("JAX111", _entry_line(code, "by_name="))


def test_a_run_time_key_gives_one_finding_per_site_and_rule_naming_every_key(tmp_path):
    (tmp_path / "policies.py").write_text(textwrap.dedent(HELPERS))
    code = """
    import jax
    from policies import get_policy

    f = jax.checkpoint(abs, policy=get_policy(REMAT))
    """
    found = _findings(code, tmp_path, "model.py")
    assert sorted((f.code, f.span.start.line + 1) for f in found) == [("JAX107", 5), ("JAX111", 5)]
    jax107 = next(f for f in found if f.code == "JAX107")
    first, second = (_entry_line(textwrap.dedent(HELPERS), k) + 1 for k in ("save_only", "also_names"))
    assert jax107.message.endswith(
        f"(chosen by the key 'save_only_these_names' of `POLICIES` in policies.py:{first};"
        f" the same mistake under the key 'also_names' of `POLICIES` in policies.py:{second})"
    )
    # Two keys choose the same broken function: one note names both.
    (tmp_path / "model.py").write_text(textwrap.dedent(code))
    workspace = Workspace([tmp_path])
    workspace.index()
    [jax103] = [f for f in workspace.check_file(tmp_path / "policies.py") if f.code == "JAX103"]
    assert jax103.message.endswith(
        "(chosen by the key 'numbers' of `POLICIES`; the same mistake under the key 'more_numbers' of `POLICIES`)"
    )


# Follows the table of policies by name that several fine-tuning libraries keep (a module-level
# `dict(...)` of `jax.checkpoint_policies` members, the factories among them uncalled, and a
# `get_gradient_checkpoint_policy(name)` that indexes it), here used with constant keys only.
BY_NAME = """
import jax
import jax.numpy as jnp

checkpoint_policies = dict(
    everything_saveable=jax.checkpoint_policies.everything_saveable,
    nothing_saveable=jax.checkpoint_policies.nothing_saveable,
    dots_saveable=jax.checkpoint_policies.dots_saveable,
    save_only_these_names=jax.checkpoint_policies.save_only_these_names,
    save_from_both_policies=jax.checkpoint_policies.save_from_both_policies,
)


def get_gradient_checkpoint_policy(name):
    return checkpoint_policies[name]


g = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=get_gradient_checkpoint_policy("nothing_saveable"))
h = jax.checkpoint(lambda x: jnp.sin(x) @ x, policy=checkpoint_policies["dots_saveable"])
f = lambda x: g(x) + h(x)
"""


def test_an_unselected_broken_member_is_reported_once_at_the_member(tmp_path):
    text = textwrap.dedent(BY_NAME)
    found = _findings(BY_NAME, tmp_path)
    assert [(f.code, f.span.start.line) for f in found] == [
        ("JAX107", _entry_line(text, "save_only_these_names=")),
        ("JAX107", _entry_line(text, "save_from_both_policies=")),
    ]
    assert found[0].message.endswith("(chosen by the key 'save_only_these_names' of `checkpoint_policies`)")
    grad_of_f(BY_NAME)  # the keys used today work
    selecting = BY_NAME.replace(
        'policy=checkpoint_policies["dots_saveable"]', 'policy=checkpoint_policies["save_only_these_names"]'
    )
    with pytest.raises(TypeError):
        grad_of_f(selecting)  # selecting the member later raises
    # The site that selects it keeps its own finding, at the same place: still one.
    assert [f.code for f in _findings(selecting, tmp_path)] == ["JAX107", "JAX107"]


def test_a_dict_that_holds_other_things_than_policies_is_no_policy_table(tmp_path):
    code = """
    import jax
    import jax.numpy as jnp


    def init(prim, *args):
        return jnp.zeros(3)


    SETTINGS = {"policy": jax.checkpoint_policies.dots_saveable, "init": init, "rate": 0.1}
    f = jax.checkpoint(lambda x: jnp.sin(x) @ x, policy=SETTINGS["policy"])
    """
    assert _findings(code, tmp_path) == []
