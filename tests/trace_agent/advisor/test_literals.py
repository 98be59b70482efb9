"""The residuals JAX lists "from a literal", on the agent's JAX release: listed as JAX lists them,
or, on a release without the tracing hooks `forward.py` needs (0.4.30), missing and said so in
the advice's `notes`. Compared with `saved_residuals` run in the agent's own interpreter, so
that it holds at both JAX ends."""

from __future__ import annotations

import collections
import json
import subprocess

import pytest

from jax_lsp.trace.advisor.request import advise
from tests.agent import ADVISOR_FIXTURES, AGENT_PYTHON, jax_kind, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

FIXTURE = ADVISOR_FIXTURES / "literal.py"

REFERENCE = """
import json, literal
from jax._src.ad_checkpoint import saved_residuals
example = literal.example()
print(json.dumps([[list(a.shape), str(a.dtype), d] for a, d in saved_residuals(example["fn"], *example["args"])]))
"""


def _jax_residuals():
    """(shape, dtype, kind) of each residual JAX's `saved_residuals` lists, in AGENT_PYTHON."""
    out = subprocess.run(
        [AGENT_PYTHON, "-c", REFERENCE], cwd=ADVISOR_FIXTURES, capture_output=True, text=True, check=True
    ).stdout
    return collections.Counter((tuple(s), d, jax_kind(text)) for s, d, text in json.loads(out))


def test_literal_residuals_are_listed_or_the_advice_says_they_are_missing(service):
    advice = advise(service, FIXTURE, line_of(FIXTURE), example="literal.py:example", root=ADVISOR_FIXTURES)
    assert advice.ok, advice.message
    theirs = _jax_residuals()
    ours = collections.Counter((r.shape, r.dtype, r.kind) for r in advice.current.residuals)
    literal = {key for key in theirs if key[2] == "literal"}
    assert literal  # the fixture's 0.5 is one on every release
    assert {k: n for k, n in ours.items() if k not in literal} == {
        k: n for k, n in theirs.items() if k not in literal
    }
    missing = ours != theirs
    assert bool(advice.notes) == missing
    if missing:
        assert not any(key in literal for key in ours)
        assert '"from a literal"' in advice.notes[0]
