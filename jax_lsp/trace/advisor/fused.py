"""Where the peak estimate is not to be trusted: a step whose estimated peak is largely the steps
of elementwise chains outside its loops and checkpoints (a language model's float32 logits and
loss after its scanned stack), which XLA fuses into their readers and never holds, where the
estimate counts each (``peak_fusible_bytes``, `trace_agent/advisor/peak.py`).

The estimate counts ``fusible / (peak - fusible)`` more than it would with all of them fused away.
Where that passes the estimate's target on scanned stacks (`WITHIN`), the candidate is named under
the table and its estimate said to be doubtful, with how much of it XLA may fuse: not a bound on
the error (the estimate of a small unscanned step is over for other reasons too); one that was
compiled has XLA's figure beside it and is not, nor is a step of a few MiB (`SMALLEST`).
"""

from __future__ import annotations

from collections.abc import Callable

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.sizes import format_bytes

WITHIN = 0.3  # the estimate's error on scanned stacks (docs/advise.md), as a fraction
# the smallest estimate the target covers: below it a step decides no fit, and is not doubted
SMALLEST = 8 * 2**20


def over_if_fused(policy: PolicyAdvice) -> float | None:
    """How much more ``policy``'s estimate counts than it would with all of its fusible bytes
    fused away (+0.9: 90% more); None without the figures."""
    peak, fusible = policy.peak_bytes, policy.peak_fusible_bytes
    if peak is None or fusible is None or not fusible:
        return None
    return fusible / (peak - fusible) if fusible < peak else float("inf")


def doubtful(advice: Advice) -> list[PolicyAdvice]:
    """The candidates not compiled whose estimate, `SMALLEST` or more, may be over by more than
    `WITHIN`."""
    return [
        p
        for p in advice.policies
        if p.error is None
        and p.compiled is None
        and (p.peak_bytes or 0) >= SMALLEST
        and (over_if_fused(p) or 0) > WITHIN
    ]


def doubt_words(advice: Advice, policy: PolicyAdvice) -> str | None:
    """``doubtful: XLA may fuse 12 MiB of it``: what to add to ``policy``'s estimate where it is
    `doubtful`."""
    if policy not in doubtful(advice):
        return None
    return f"doubtful: XLA may fuse {format_bytes(policy.peak_fusible_bytes or 0)} of it"


def _span(low: str, high: str) -> str:
    return low if low == high else f"{low} to {high}"


def fusible_note(advice: Advice, name: Callable[[str], str]) -> str | None:
    """``peak (est.) is not to be trusted in nothing, dots: ...``, the candidates `doubtful`
    named by ``name``; None where there are none."""
    found = doubtful(advice)
    if not found:
        return None
    shares = sorted((p.peak_fusible_bytes or 0) / (p.peak_bytes or 1) for p in found)
    which = (
        "every candidate" if len(found) == len(advice.policies) else ", ".join(name(p.policy) for p in found)
    )
    return (
        f"peak (est.) is not to be trusted in {which}: {_span(f'{shares[0]:.0%}', f'{shares[-1]:.0%}')} "
        "of it is elementwise values outside the step's loops and checkpoints (a loss's logits, "
        "say), which XLA fuses into their readers where the estimate counts each; --compile gives "
        "XLA's figure"
    )
