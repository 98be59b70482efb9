"""Ready-made candidates that give every answer JAX asked of an earlier one alike share its trace:
each such answer equals the candidate's own trace, under real JAX, in the agent's interpreter."""

from __future__ import annotations

import pytest

from jax_lsp.trace.advisor.contract import residual_json
from jax_lsp.trace.advisor.request import advise
from tests.agent import ADVISOR_FIXTURES, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

FIXTURE = ADVISOR_FIXTURES / "no_effect.py"
NAMES = "jax.checkpoint_policies.save_only_these_names"
# nothing_saveable answers every question False; so do the names tagged nowhere (query_proj) or
# outside the checkpoint (decoder_layer_input). mlpwo is tagged inside: its answers differ, its
# residuals do not (the backward pass never reads it). dots_saveable and mlpwi keep more.
POLICIES = [
    "jax.checkpoint_policies.nothing_saveable",
    f"{NAMES}('query_proj')",
    f"{NAMES}('decoder_layer_input')",
    f"{NAMES}('mlpwo')",
    "jax.checkpoint_policies.dots_saveable",
    f"{NAMES}('query_proj', 'decoder_layer_input')",
    f"{NAMES}('mlpwi')",
]


def _advise(service, policies):
    advice = advise(
        service,
        FIXTURE,
        line_of(FIXTURE),
        example="no_effect.py:example",
        root=str(ADVISOR_FIXTURES),
        policies=policies,
    )
    assert advice.ok, advice.message
    return advice


def _entry(policy):
    return {
        "device_bytes": policy.device_bytes,
        "host_bytes": policy.host_bytes,
        "recompute_flops": policy.recompute_flops,
        "peak_bytes": policy.peak_bytes,
        "residuals": [residual_json(r, ADVISOR_FIXTURES) for r in policy.residuals],
    }


def test_candidates_answering_alike_share_a_trace_equal_to_their_own(service):
    together = _advise(service, POLICIES)
    traced = dict(together.timings)["traced"]
    # the site's own policy (not among them) is traced, and at least one candidate was copied
    assert traced < len(together.policies) == len(POLICIES) + 1
    by_text = {p.policy: p for p in together.policies}
    for text in POLICIES:
        alone = _advise(service, [text])
        assert dict(alone.timings)["traced"] == 2  # the site's own policy and this one
        own = next(p for p in alone.policies if p.policy == text)
        assert _entry(by_text[text]) == _entry(own), text
    nothing = _entry(by_text[POLICIES[0]])
    assert _entry(by_text[POLICIES[1]]) == nothing
    assert _entry(by_text[POLICIES[4]]) != nothing  # a candidate that answers otherwise is traced
