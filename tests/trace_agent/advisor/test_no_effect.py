"""The names of the site's policy that change nothing (`no_effect`), each with its reason, and the
candidates that keep the same residuals (`same_as`): each checked against JAX's own
`saved_residuals` of the fixture with the policy rewritten, and against the fixture's jaxpr."""

from __future__ import annotations

import collections
import importlib.util

import pytest

from jax_lsp.trace.advisor.request import advise
from tests.advisor_reference import reference_residuals
from tests.agent import ADVISOR_FIXTURES, line_of, skip_unless_agent_runs_this_jax

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")

FIXTURE = ADVISOR_FIXTURES / "no_effect.py"
OFFLOAD = "jax.checkpoint_policies.save_and_offload_only_these_names"


def _policy(saved, offloaded):
    return (
        f"{OFFLOAD}(names_which_can_be_saved={saved!r}, names_which_can_be_offloaded={offloaded!r}, "
        "offload_src='device', offload_dst='pinned_host')"
    )


SAVED = ["decoder_layer_input", "mlpwi", "mlpwo"]
OFFLOADED = ["attention_out", "query_proj"]


@pytest.fixture(scope="module")
def advice(service):
    return advise(
        service, FIXTURE, line_of(FIXTURE), example="no_effect.py:example", root=str(ADVISOR_FIXTURES)
    )


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """What JAX keeps (shape, dtype, memory: a multiset) for the fixture under a policy text."""
    skip_unless_agent_runs_this_jax()
    workdir = tmp_path_factory.mktemp("no_effect")
    line = line_of(FIXTURE)

    def of(policy: str) -> collections.Counter:
        listed = reference_residuals(
            ADVISOR_FIXTURES, "no_effect.py", line, policy, "no_effect:example", workdir
        )
        return collections.Counter(
            (
                tuple(a.shape),
                str(a.dtype),
                "host" if "host" in str(getattr(a, "memory_space", "")).lower() else "device",
            )
            for a, _ in listed
        )

    return of


def _without(name):
    return _policy([n for n in SAVED if n != name], [n for n in OFFLOADED if n != name])


def test_each_name_that_changes_nothing_is_reported_with_its_reason(advice):
    assert advice.ok, advice.message
    found = {n.name: n for n in advice.current.no_effect}
    assert {name: (n.role, n.reason) for name, n in found.items()} == {
        "decoder_layer_input": ("saved", "not_produced"),
        "query_proj": ("offloaded", "not_produced"),
        "mlpwo": ("saved", "not_needed"),
    }
    tag_line = line_of(FIXTURE, 'checkpoint_name(x * 2.0, "decoder_layer_input")')
    assert found["decoder_layer_input"].tagged_outside == ((str(FIXTURE), tag_line),)
    assert found["query_proj"].tagged_outside == ()  # tagged nowhere


@pytest.mark.parametrize("name", ["decoder_layer_input", "query_proj", "mlpwo"])
def test_without_a_reported_name_jax_keeps_the_same(advice, kept, name):
    current = _policy(SAVED, OFFLOADED)
    assert kept(_without(name)) == kept(current)
    entry = next(n for n in advice.current.no_effect if n.name == name)
    assert entry.without is not None and name not in entry.without
    assert kept(entry.without) == kept(current)  # the quick fix's text, as JAX reads it


@pytest.mark.parametrize("name", ["mlpwi", "attention_out"])
def test_a_name_that_changes_what_is_kept_is_never_reported(advice, kept, name):
    assert kept(_without(name)) != kept(_policy(SAVED, OFFLOADED))
    assert name not in {n.name for n in advice.current.no_effect}


def _fixture_module():
    """The fixture, run under a name of its own (``no_effect`` stays free for the references)."""
    spec = importlib.util.spec_from_file_location("_no_effect_fixture", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names(jaxpr, inside=False):
    """(name, inside the checkpoint) of every checkpoint_name equation of ``jaxpr``."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "name":
            found.append((eqn.params["name"], inside))
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", value)
            if hasattr(inner, "eqns"):
                found += _names(inner, inside or eqn.primitive.name.startswith(("checkpoint", "remat")))
    return found


def test_the_reasons_hold_in_the_jaxpr_and_in_what_jax_saves(kept):
    module = _fixture_module()
    example = module.example()
    names = _names(jax.make_jaxpr(example["fn"])(*example["args"]).jaxpr)
    assert ("decoder_layer_input", False) in names and ("decoder_layer_input", True) not in names
    assert not any(name == "query_proj" for name, _ in names)
    assert ("mlpwo", True) in names
    # the backward pass never reads mlpwo: saving it alone keeps what saving nothing keeps
    assert kept("jax.checkpoint_policies.save_only_these_names('mlpwo')") == kept(
        "jax.checkpoint_policies.nothing_saveable"
    )
    assert kept("jax.checkpoint_policies.save_only_these_names('mlpwi')") != kept(
        "jax.checkpoint_policies.nothing_saveable"
    )


def test_same_as_lists_the_candidates_that_keep_the_same_residuals(advice, kept):
    by_policy = {p.policy: p for p in advice.policies}
    dots = by_policy["jax.checkpoint_policies.dots_saveable"]
    same = {p.policy for p in advice.same_as(dots)}
    assert "jax.checkpoint_policies.dots_with_no_batch_dims_saveable" in same
    for policy in same | {dots.policy}:
        assert kept(policy) == kept(dots.policy)
    others = [p for p in advice.policies if p.policy not in same | {dots.policy} and not p.current]
    assert others and all(kept(p.policy) != kept(dots.policy) for p in others)


ONLY = "jax.checkpoint_policies.save_only_these_names"
BUT = "jax.checkpoint_policies.save_any_names_but_these"
BOTH = "jax.checkpoint_policies.save_from_both_policies"
COMBINED = f"{BOTH}({ONLY}('mlpwi'), {BUT}('mlpwi', 'query_proj'))"


def test_combined_policies_each_name_of_each_part(service, kept, tmp_path):
    """In `save_from_both_policies`, a name one part excludes while the other part saves it is
    `kept_otherwise`; a name excluded but never tagged is `not_produced`; the name the first
    part saves is not reported: without it, nothing saves it."""
    text = FIXTURE.read_text(encoding="utf-8")
    start = text.index("policy=") + len("policy=")
    end = text.index("\n)\n", start)
    site = tmp_path / "no_effect.py"
    site.write_text(text[:start] + COMBINED + text[end:], encoding="utf-8")
    advice = advise(service, site, line_of(site), example="no_effect.py:example", root=str(tmp_path))
    assert advice.ok, advice.message
    found = sorted((n.name, n.role, n.reason) for n in advice.current.no_effect)
    assert found == [("mlpwi", "excluded", "kept_otherwise"), ("query_proj", "excluded", "not_produced")]
    assert kept(COMBINED) == kept(f"{BOTH}({ONLY}('mlpwi'), {BUT}('query_proj'))")
    assert kept(COMBINED) == kept(f"{BOTH}({ONLY}('mlpwi'), {BUT}('mlpwi'))")
    # the backward pass reads mlpwi: kept by the first part, it changes what is kept
    assert kept(COMBINED) != kept(f"{BOTH}({ONLY}(), {BUT}('mlpwi', 'query_proj'))")
