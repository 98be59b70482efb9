"""JAX116: a container of names given as one name to a factory of names."""

from __future__ import annotations

import pytest

from jax_lsp.core import Severity
from tests.rules.site_rules import anchored_text, findings, fixed

HEADER = """
import jax
import jax.numpy as jnp

cp = jax.checkpoint_policies
"""


@pytest.mark.parametrize(
    "setup, policy, reported, severity, after",
    [
        (
            "",
            'cp.save_only_these_names({"a", "b"})',
            '{"a", "b"}',
            Severity.ERROR,
            'cp.save_only_these_names("a", "b")',
        ),
        (
            "",
            "cp.save_only_these_names([n for n in NAMES])",
            "[n for n in NAMES]",
            Severity.ERROR,
            "cp.save_only_these_names(*[n for n in NAMES])",
        ),
        ("son = cp.save_only_these_names\n", 'son(("a",))', '("a",)', Severity.WARNING, 'son("a")'),
        (
            "EXCLUDED = ('a', 'b')\n",
            "cp.save_any_names_but_these(EXCLUDED)",
            "EXCLUDED",
            Severity.WARNING,
            "cp.save_any_names_but_these(*EXCLUDED)",
        ),
        (
            "",
            'cp.save_only_these_names("a", ("b", "c"))',
            '("b", "c")',
            Severity.WARNING,
            'cp.save_only_these_names("a", "b", "c")',
        ),
        ("", "cp.save_only_these_names(())", "()", Severity.WARNING, "cp.save_only_these_names()"),
    ],
    ids=["set", "list-comprehension", "alias", "tuple-name", "second-argument", "empty"],
)
def test_a_container_given_as_one_name_is_found_and_unpacked(
    setup, policy, reported, severity, after, tmp_path
):
    code = f"{HEADER}NAMES = ['a']\n{setup}\nf = jax.checkpoint(jnp.sin, policy={policy})\n"
    [finding] = findings(code, tmp_path, "JAX116")
    assert anchored_text(code, finding) == reported
    assert finding.severity is severity
    assert f"policy={after})" in fixed(code, [finding])
    assert all(fix.safe for fix in finding.fixes)


def test_a_multiline_tuple_keeps_its_lines(tmp_path):
    code = f'{HEADER}\nPOLICY = cp.save_only_these_names((\n    "a",  # attention\n    "b",\n))\n'
    [finding] = findings(code, tmp_path, "JAX116")
    assert 'cp.save_only_these_names("a",  # attention\n    "b")' in fixed(code, [finding])


def test_a_list_from_another_module_is_unpacked_where_it_is_used(tmp_path):
    (tmp_path / "names.py").write_text('SAVED = ["a", "b"]\n')
    code = f"{HEADER}from names import SAVED\n\nPOLICY = cp.save_only_these_names(SAVED)\n"
    [finding] = findings(code, tmp_path, "JAX116", name="model.py")
    assert "unhashable type: 'list'" in finding.message
    assert "cp.save_only_these_names(*SAVED)" in fixed(code, [finding])


@pytest.mark.parametrize(
    "policy",
    [
        'cp.save_only_these_names("a", "b")',
        "cp.save_only_these_names(*NAMES)",
        "cp.save_only_these_names(*['a', 'b'])",
        "cp.save_only_these_names(UNKNOWN)",
        # Ignores its names in jax 0.10.2 and 0.12: a tuple changes nothing there.
        'cp.save_anything_except_these_names(("a", "b"))',
        # Takes lists by keyword on purpose.
        'cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"], '
        'names_which_can_be_offloaded=["b"], offload_src="device", offload_dst="pinned_host")',
    ],
)
def test_names_passed_one_by_one_are_not_reported(policy, tmp_path):
    code = f"{HEADER}NAMES = ('a', 'b')\nUNKNOWN = load()\n\nPOLICY = {policy}\n"
    assert findings(code, tmp_path, "JAX116") == []


def test_the_two_behaviours_hold_under_jax():
    """A tuple is one (unmatched) name; a list or a set raises when the policy is made."""
    cp = pytest.importorskip("jax").checkpoint_policies
    cp.save_only_these_names(("a", "b"))
    for container in (["a"], {"a"}):
        with pytest.raises(TypeError, match="unhashable type"):
            cp.save_only_these_names(container)
        with pytest.raises(TypeError, match="unhashable type"):
            cp.save_any_names_but_these(container)
