"""Why each residual is kept (`reason`), which lines of the backward pass read it (`used_by`), and
the residuals of a Python loop's iterations grouped: under real JAX, on layer_loop.py, whose
lines are found by their comments."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice, grouped
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

FIXTURE = ADVISOR_FIXTURES / "layer_loop.py"
PATH = str(FIXTURE.resolve())
MATMUL, NAMED, OUTPUT, OUTSIDE = (
    line_of(FIXTURE, f"# {tag}") for tag in ("matmul", "named", "layer output", "outside")
)
LAYERS = 4


@pytest.fixture(scope="module")
def advice(service) -> Advice:
    found = advise(
        service,
        FIXTURE,
        line_of(FIXTURE),
        example=f"{FIXTURE}:example",
        root=ADVISOR_FIXTURES,
        options=TraceOptions(timeout=120),
    )
    assert found.ok, found.message
    return found


def _policy(advice: Advice, ending: str) -> PolicyAdvice:
    return next(p for p in advice.policies if p.policy.endswith(ending))


def _computed(policy: PolicyAdvice, line: int) -> list:
    return [r for r in policy.residuals if r.kind == "computed" and r.line == line and r.path == PATH]


def test_a_matmul_saved_by_dots_saveable_is_kept_by_the_policy(advice):
    dots = _policy(advice, ".dots_saveable")
    matmuls = _computed(dots, MATMUL)
    assert len(matmuls) == LAYERS
    assert {r.reason for r in matmuls} == {"policy"}
    # the backward pass reads the saved matmul where it recomputes tanh from it
    assert {r.used_by for r in matmuls} == {((PATH, NAMED),)}


def test_a_named_value_is_kept_by_name(advice):
    named = _policy(advice, "save_only_these_names('h')")
    kept = [r for r in named.residuals if r.name == "h"]
    assert len(kept) == LAYERS
    assert {(r.reason, r.line) for r in kept} == {("named", NAMED)}
    assert {r.used_by for r in kept} == {((PATH, OUTPUT),)}  # sin's derivative reads h
    assert not [r for r in named.residuals if r.reason == "policy"]


def test_the_arguments_and_the_layers_inputs_are_arguments(advice):
    """The step's arguments, and each layer's input (the previous layer's output, made inside a
    checkpoint that does not save it), whatever the policy."""
    for policy in advice.policies:
        assert {r.reason for r in policy.residuals if r.kind == "argument"} == {"argument"}, policy.policy
    nothing = _policy(advice, "nothing_saveable")
    inputs = _computed(nothing, OUTPUT)
    assert len(inputs) == LAYERS - 1
    assert {r.reason for r in inputs} == {"argument"}
    assert {r.used_by for r in inputs} == {((PATH, MATMUL),)}  # the next layer's matmul reads it


def test_a_value_outside_every_checkpoint_is_kept_whatever_the_policy(advice):
    for policy in advice.policies:
        outside = _computed(policy, OUTSIDE)
        assert [(r.reason, r.used_by) for r in outside] == [("default", ((PATH, OUTSIDE),))], policy.policy
    nothing = _policy(advice, "nothing_saveable")
    assert {r.reason for r in nothing.residuals} == {"argument", "default"}


def test_an_offloaded_value_says_so(advice):
    offload = [p for p in advice.policies if "offload_dot_with_no_batch_dims" in p.policy]
    if not offload:
        pytest.skip("the device has no pinned_host memory")
    kept = [r for r in offload[0].residuals if r.memory == "host"]
    assert len(kept) == LAYERS
    assert {(r.reason, r.line, r.used_by) for r in kept} == {("offloaded", MATMUL, ((PATH, NAMED),))}


def test_a_loops_iterations_are_one_group(advice):
    dots = _policy(advice, ".dots_saveable")
    counts = collections.Counter({(r.description, r.line): n for r, n in grouped(dots.residuals)})
    assert counts[("output of dot_general", MATMUL)] == LAYERS
    assert counts[("output of sin", OUTPUT)] == LAYERS - 1
    assert counts[("output of exp", OUTSIDE)] == 1
    # the arguments (made on no line) are never grouped, even of one shape
    assert sum(1 for r, _ in grouped(dots.residuals) if r.kind == "argument") == 1 + LAYERS
    entry = next(e for e in advice.to_contract(ADVISOR_FIXTURES)["policies"] if e["policy"] == dots.policy)
    rows = entry["residuals"]
    assert len(rows) == len(dots.residuals)  # the JSON keeps each one
    matmul_groups = {r["group"] for r in rows if r["line"] == MATMUL}
    assert len(matmul_groups) == 1
    (first,) = matmul_groups
    assert rows[first]["line"] == MATMUL and rows[first]["reason"] == "policy"
    assert all(r["group"] is None for r in rows if r["kind"] == "argument" or r["line"] == OUTSIDE)
    assert [u["path"] for r in rows for u in r["used_by"]] == [Path(FIXTURE).name] * sum(
        len(r["used_by"]) for r in rows
    )


def _kept(table: str, place: str) -> str:
    """What the list under the table says of the residuals made at ``place`` (``file.py:7``)."""
    [line] = [line.split(None, 3)[3] for line in table.splitlines() if line.split()[:1] == [place]]
    return line


def test_the_table_shows_the_groups_and_reasons(advice):
    table = advice_table(advice, ADVISOR_FIXTURES, None)
    assert _kept(table, f"layer_loop.py:{MATMUL}").endswith(
        f"x{LAYERS} output of dot_general · saved by the policy"
    )
    assert _kept(table, f"layer_loop.py:{OUTPUT}").endswith(f"x{LAYERS - 1} output of sin · an argument")
    assert _kept(table, f"layer_loop.py:{OUTSIDE}").endswith("output of exp · kept whatever the policy")


def test_a_conds_outputs_have_no_reason(service):
    """JAX decides a `cond`'s residuals inside its branches without asking the policy about the
    `cond`: the advisor gives no reason rather than a guess (cond_layer.py)."""
    fixture = ADVISOR_FIXTURES / "cond_layer.py"
    found = advise(service, fixture, line_of(fixture), example=f"{fixture}:example", root=ADVISOR_FIXTURES)
    assert found.ok, found.message
    everything = _policy(found, "everything_saveable")
    branch = line_of(fixture, "# branch")
    conds = [r for r in everything.residuals if r.description == "output of cond"]
    assert conds and {(r.reason, r.line) for r in conds} == {(None, branch)}
    others = [r for r in everything.residuals if r.description != "output of cond"]
    assert {r.reason for r in others} == {"argument", "policy"}
    table = advice_table(found, ADVISOR_FIXTURES, None)
    assert _kept(table, f"cond_layer.py:{branch}").split("; ")[-1].endswith("output of cond")  # and no reason


def test_a_named_value_stacked_by_a_scan_keeps_its_name(service, tmp_path):
    """JAX describes a scan's stacked residual as the scan's output; the advice names it after
    the `checkpoint_name` inside the body that made it."""
    stack = tmp_path / "stack.py"
    stack.write_text(
        "import jax\nimport jax.numpy as jnp\nfrom jax.ad_checkpoint import checkpoint_name\n\n\n"
        "def layer(h, w):\n    return jnp.tanh(checkpoint_name(h @ w, 'pre')), None\n\n\n"
        "def stack(ws, x):\n"
        "    body = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)\n"
        "    return jnp.sum(jax.lax.scan(body, x, ws)[0])\n\n\n"
        "def example():\n    matrices = jax.ShapeDtypeStruct((3, 8, 8), jnp.float32)\n"
        "    return {'fn': stack, 'args': (matrices, jax.ShapeDtypeStruct((4, 8), jnp.float32))}\n"
    )
    found = advise(
        service,
        stack,
        line_of(stack),
        example="stack.py:example",
        policies=["save_only_these_names('pre')"],
        root=tmp_path,
        options=TraceOptions(timeout=120),
    )
    assert found.ok, found.message
    named = [r for r in _policy(found, "save_only_these_names('pre')").residuals if r.reason == "named"]
    assert [(r.name, r.iterations, r.shape) for r in named] == [("pre", 3, (3, 4, 8))]
