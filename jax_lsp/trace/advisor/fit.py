"""A budget's suggestion checked by compiling (`jax-lsp advise --budget` without `--compile`).

The estimated peak does not rank the candidates as XLA does where the step is not a scan over
layers (docs/advise.md, "The peak estimate against the compiled step"), so a suggestion made
from it may not fit. Before suggesting, the candidates the suggestion depends on are compiled,
in the order it prefers them (`Advice.preference`), one tie at a time, until a tie holds one
that fits: every candidate before it does not fit, and it beats every one after it but those
whose step measured clearly faster (`advise --run`), which are compiled too. A tie whose
compile failed (its candidates' `compile_error` says why) counts as not fitting: the next is tried.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import replace

from jax_lsp.trace.advisor import runs
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.compiled import COMPILE_FIELDS
from jax_lsp.trace.advisor.policy_advice import FitCheck, PolicyAdvice


def _answered(answer: Advice, policy: PolicyAdvice) -> PolicyAdvice:
    """``policy``'s entry in the compiling ``answer`` (the current policy by its flag: its text may
    not be an expression of the site's module), or the entry saying why it has none."""
    if not answer.ok:
        return replace(policy, compile_error=f"{answer.status}: {answer.message}")
    if policy.current:
        found = answer.current
    else:
        found = next((p for p in answer.policies if p.policy == policy.policy and not p.current), None)
    if found is None or not found.was_compiled:
        return replace(policy, compile_error=found.error if found is not None else "not advised again")
    return found


def check_fit(advice: Advice, budget: int, compile_candidates: Callable[[list[str]], Advice]) -> Advice:
    """``advice`` with the compiled figures of the candidates its suggestion for ``budget``
    depends on, and its `FitCheck` (an advice already compiled, or not advised, as it is).
    ``compile_candidates(policies)`` advises the site again with those candidates (their
    ``policy`` expressions), compiling."""
    if not advice.ok or advice.compiled:
        return advice
    begun = time.perf_counter()
    ranked = sorted((p for p in advice.policies if p.error is None), key=advice.preference)
    compiled: dict[str, PolicyAdvice] = {}
    fitted: PolicyAdvice | None = None  # the first tie's candidate that fits
    for _, tie in itertools.groupby(ranked, key=advice.preference):
        # after one fits, only a candidate whose step measured clearly faster (--run) may still win
        group = [
            p for p in tie if fitted is None or runs.clearly_slower(fitted.run, runs.measured_step(p.run))
        ]
        if not group:
            continue
        answer = compile_candidates([p.policy for p in group])
        for policy in group:
            compiled[policy.policy] = _answered(answer, policy)
        fits = [
            p
            for p in group
            if (temp := compiled[p.policy].compiled) is not None and temp.temp_bytes <= budget
        ]
        fitted = fitted or next(iter(fits), None)
    policies = tuple(
        replace(p, **{name: getattr(again, name) for name in COMPILE_FIELDS})
        if (again := compiled.get(p.policy)) is not None
        else p
        for p in advice.policies
    )
    check = FitCheck(tuple(compiled), time.perf_counter() - begun)
    return replace(advice, policies=policies, fit_check=check)
