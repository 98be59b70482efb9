"""Checkpoints without a policy: the advice's current policy is JAX's default (`None`), its
residuals are what JAX keeps for the code as written, and equal `nothing_saveable`'s; the edit
that passes the suggestion (`core.policies.default_sites.policy_edits`) gives code that runs and
keeps what the advice said that policy keeps."""

from __future__ import annotations

import collections
import itertools
import sys
import types

import pytest

from jax_lsp.core import apply_edits
from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.sites import DEFAULT, advise_anchors, default_policy_edits
from jax_lsp.trace.options import TraceOptions
from tests.advisor_reference import saved_residuals
from tests.agent import (
    ADVISOR_FIXTURES,
    jax_kind,
    skip_unless_agent_runs_this_jax,
    skip_where_agent_lacks_imports,
)

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("equinox")

PATH = ADVISOR_FIXTURES / "no_policy.py"
DOTS = "jax.checkpoint_policies.dots_saveable"
_fresh = itertools.count()

# the start of the site's line -> its example (the example's positional arguments go to
# `block`: the one site advised with an "args" example)
FORMS = {
    "block = jax.checkpoint(mlp)": "example_block",
    "fast = jax.remat(mlp, prevent_cse=False)": "example_fast",
    "eqx_block = eqx.filter_checkpoint(mlp)": "example_eqx_block",
    "@jax.checkpoint": "example_layer",
    "@jax.remat": "example_remat_layer",
    "@partial(jax.checkpoint, static_argnums=(3,))": "example_repeated",
    "@nnx.remat": "example_nnx_layer",
    "@eqx.filter_checkpoint": "example_eqx_layer",
    "@nn.remat": "example_model",
    "x = nn.remat(Block)()(x)": "example_model",
    "x = nn.checkpoint(Block)()(x)": "example_model",
}


def _line(needle: str) -> int:
    lines = PATH.read_text(encoding="utf-8").splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.strip().startswith(needle))


def _module(text: str) -> types.ModuleType:
    name = f"_no_policy_reference_{next(_fresh)}"
    module = types.ModuleType(name)
    module.__file__ = str(PATH)
    sys.modules[name] = module
    exec(compile(text, str(PATH), "exec"), module.__dict__)
    return module


def _kept(text: str, example: str):
    """What JAX's `saved_residuals` lists for the example of ``text`` run as a module."""
    module = _module(text)
    value = getattr(module, example)()
    if isinstance(value, dict):
        found = saved_residuals(value["fn"], *value["args"])
    else:
        found = saved_residuals(module.block, *value)
    return collections.Counter((tuple(a.shape), str(a.dtype), jax_kind(d)) for a, d in found)


def _ours(entry):
    return collections.Counter((r.shape, r.dtype, r.kind) for r in entry.residuals)


def test_every_checkpoint_without_a_policy_is_a_site():
    workspace = Workspace(roots=[ADVISOR_FIXTURES])
    found = {a.line for a in advise_anchors(workspace, str(PATH)) if a.kind == DEFAULT}
    assert found == {_line(needle) for needle in FORMS}


@pytest.mark.parametrize("needle", sorted(FORMS))
def test_the_default_is_what_jax_keeps_and_the_quick_fix_passes_the_suggestion(service, needle):
    skip_unless_agent_runs_this_jax()
    skip_where_agent_lacks_imports(PATH)
    line, example = _line(needle), FORMS[needle]
    advice = advise(
        service,
        PATH,
        line,
        example=f"no_policy.py:{example}",
        root=ADVISOR_FIXTURES,
        options=TraceOptions(timeout=120),
    )
    assert advice.ok, advice.message
    assert advice.line == line
    current = advice.current
    assert current is not None and current.policy == "None"
    text = PATH.read_text(encoding="utf-8")
    assert _ours(current) == _kept(text, example)
    nothing = next(p for p in advice.policies if p.policy.endswith(".nothing_saveable"))
    assert _ours(nothing) == _ours(current)
    assert (nothing.computed_bytes, nothing.recompute_flops) == (
        current.computed_bytes,
        current.recompute_flops,
    )

    dots = next(p for p in advice.policies if p.policy == DOTS)
    assert _ours(dots) != _ours(current)  # the fixture's blocks have matmuls worth keeping
    workspace = Workspace(roots=[ADVISOR_FIXTURES])
    [anchor] = [a for a in advise_anchors(workspace, str(PATH)) if a.kind == DEFAULT and a.line == line]
    edits = default_policy_edits(workspace, str(PATH), anchor.span.start, DOTS)
    assert edits
    fixed = apply_edits(text, edits)
    assert _kept(fixed, example) == _ours(dots)


JAX_ONLY = """
import jax
import jax.numpy as jnp


def mlp(x, w):
    h = jnp.sin(x @ w)
    return jnp.sum(jnp.cos(h @ w) * h)


block = jax.checkpoint(mlp)


@jax.remat
def layer(x, w):
    return mlp(x, w)


def example_block():
    return jax.ShapeDtypeStruct((8, 8), jnp.float32), jax.ShapeDtypeStruct((8, 8), jnp.float32)


def example_layer():
    return {"fn": layer, "args": example_block()}
"""


@pytest.mark.parametrize(
    ("needle", "example"), [("block = ", "example_block"), ("@jax.remat", "example_layer")]
)
def test_no_policy_keeps_what_nothing_saveable_keeps_on_the_agents_release(
    service, tmp_path, needle, example
):
    """`None (default: nothing_saveable)` holds on every release the agent runs (JAX's
    `params['policy'] or nothing_saveable`): in one answer, the site as written keeps and
    recomputes what `nothing_saveable` does, and less than `dots_saveable`. JAX alone here, so
    that it runs at both JAX ends."""
    path = tmp_path / "jax_only.py"
    path.write_text(JAX_ONLY.lstrip(), encoding="utf-8")
    line = next(n for n, text in enumerate(JAX_ONLY.lstrip().splitlines(), 1) if text.startswith(needle))
    advice = advise(service, path, line, example=f"jax_only.py:{example}", root=tmp_path)
    assert advice.ok, advice.message
    current = advice.current
    assert current is not None and current.policy == "None"
    nothing = next(p for p in advice.policies if p.policy.endswith(".nothing_saveable"))
    dots = next(p for p in advice.policies if p.policy == DOTS)
    assert (_ours(current), current.computed_bytes, current.recompute_flops) == (
        _ours(nothing),
        nothing.computed_bytes,
        nothing.recompute_flops,
    )
    assert _ours(dots) != _ours(current)
