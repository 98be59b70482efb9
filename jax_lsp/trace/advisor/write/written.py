"""A policy written for a budget, as the advice shows it: the written candidate (compiled), the
edits that give it to the user's code, and, honestly, what it is compared with: the best named
candidate that fits, or, where nothing fits, by how much the smallest misses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jax_lsp.core.findings import Edit
from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.fastest import seconds_text
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops
from jax_lsp.trace.advisor.table import policy_label
from jax_lsp.trace.advisor.write.search import Objective, Search
from jax_lsp.trace.advisor.write.values import ValueGroup

WRITTEN = "written"  # a written policy fits and beats every named candidate that fits
NAMED = "named"  # a named candidate that fits is as good: it is suggested instead
NONE_FITS = "none_fits"  # nothing compiled within the budget
NOT_WRITTEN = "not_written"  # the search could not write one (it says why)


@dataclass(frozen=True)
class SearchCost:
    """What the search spent: the written candidates it compiled, its wall time, and what it
    minimised."""

    compiles: int
    seconds: float
    objective: str

    def to_json(self) -> dict[str, Any]:
        return {"compiles": self.compiles, "seconds": self.seconds, "objective": self.objective}


@dataclass(frozen=True)
class WrittenPolicy:
    """The outcome of writing a policy for ``budget`` at one site."""

    budget: int
    verdict: str  # WRITTEN, NAMED, NONE_FITS or NOT_WRITTEN
    message: str  # one sentence saying it
    entry: PolicyAdvice | None  # the written candidate, compiled with its tags (None: none fits)
    tags: tuple[ValueGroup, ...] = ()  # the tags its edit adds
    edits: tuple[Edit, ...] = ()  # the tags' edits and the site's (`site_edit_note` where none)
    site_edit_note: str | None = None  # why the edits do not set the site's policy, if they do not
    named: PolicyAdvice | None = None  # the best named candidate that fits
    missed_by: int | None = None  # nothing fits: by how much the smallest misses
    smallest: str | None = None  # nothing fits: the policy of the smallest
    cost: SearchCost | None = None
    step_estimate_s: float | None = None

    @property
    def expression(self) -> str | None:
        return self.entry.policy if self.entry is not None else None

    @property
    def label(self) -> str:
        """The table's name of its row: ``written for 6 GiB``."""
        return f"written for {format_bytes(self.budget)}"


# The edits that set the site's policy to a written one (keeping, offloading, its expression),
# or none and why (`site_edit.site_edits`).
SiteEdit = Callable[[list[str], list[str], str], tuple[list[Edit], "str | None"]]


def conclude(search: Search, site_edit: SiteEdit) -> WrittenPolicy:
    """What ``search`` found, compared with the named candidates of its advice: the written
    policy where it fits and beats the best named one that fits, with the edits that tag its
    values and set it at the site (``site_edit``); else that named one; else by how much the
    smallest candidate misses (or why no policy could be written)."""
    advice, budget, objective = search.advice, search.budget, search.objective
    named = _best_named(advice, budget, objective)
    best = search.best()
    cost = SearchCost(len(search.probes), search.seconds, objective.words)
    if best is not None and best.entry is not None:
        if named is None or objective.better(best.entry, named):
            kept = set(best.kept) | set(best.offloaded)
            plan = search.plan
            tags = tuple(g for g in plan.groups if g.added and g.name in kept) if plan else ()
            edits = [e for t in (plan.tagged(kept).values() if plan else ()) for e in t.edits]
            at_site, note = site_edit(list(best.kept), list(best.offloaded), best.expression)
            words = _versus(advice, best.entry, named, objective)
            message = f"{_label(advice, best.entry)} fits ({_size(advice, best.entry)} within {format_bytes(budget)}){words}"
            predicted = step_time.policy_estimate(advice.target, best.entry)
            return WrittenPolicy(
                budget,
                WRITTEN,
                message,
                best.entry,
                tags,
                (*edits, *at_site),
                note,
                named=named,
                cost=cost,
                step_estimate_s=predicted.seconds if predicted is not None else None,
            )
    if named is not None:
        why = search.error or _not_better(advice, best.entry if best is not None else None, named, objective)
        message = f"{why}: use {_label(advice, named)} ({_size(advice, named)} within {format_bytes(budget)})"
        return WrittenPolicy(budget, NAMED, message, None, named=named, cost=cost)
    if search.error is not None and not search.probes:
        return WrittenPolicy(budget, NOT_WRITTEN, search.error, None, cost=cost)
    smallest = _smallest(advice, search)
    if smallest is None:
        return WrittenPolicy(
            budget, NONE_FITS, "no candidate compiled: nothing is known to fit", None, cost=cost
        )
    policy, size = smallest
    missed = size - budget
    message = f"nothing fits {format_bytes(budget)}: the smallest, {policy}, needs {format_bytes(size)} ({format_bytes(missed)} more)"
    return WrittenPolicy(budget, NONE_FITS, message, None, missed_by=missed, smallest=policy, cost=cost)


def _best_named(advice: Advice, budget: int, objective: Objective) -> PolicyAdvice | None:
    fitting = [
        p
        for p in advice.policies
        if p.error is None and (size := advice.budgeted_bytes(p)) is not None and size <= budget
    ]
    return min(fitting, key=objective.key, default=None)


def _smallest(advice: Advice, search: Search) -> tuple[str, int] | None:
    sizes = [(p.policy, advice.budgeted_bytes(p)) for p in advice.policies if p.error is None]
    sizes += [(p.expression, p.size) for p in search.probes]
    known = [(policy, size) for policy, size in sizes if size is not None]
    return min(known, key=lambda pair: pair[1], default=None)


def _label(advice: Advice, policy: PolicyAdvice) -> str:
    """The policy as the table names it: ``None (default: nothing_saveable)`` for JAX's default."""
    return policy_label(policy, advice.user_call)


def _size(advice: Advice, policy: PolicyAdvice) -> str:
    size = advice.budgeted_bytes(policy)
    return "size unknown" if size is None else format_bytes(size)


def _not_better(
    advice: Advice, written: PolicyAdvice | None, named: PolicyAdvice, objective: Objective
) -> str:
    """Why the named one is suggested: no written policy is better, and, where one fits, its step
    beside the named one's where the objective is a step time (within the model's error, a tie is
    no win), else its recompute."""
    if written is None:
        return "no written policy is better"
    mine, theirs = (step_time.ranked_seconds(advice.target, p) for p in (written, named))
    if not objective.timed or mine is None or theirs is None:
        return f"no written policy is better (the best, {_label(advice, written)}, recomputes {format_flops(written.recompute_flops)})"
    return (
        f"no written policy is better beyond the step model's error: the best, {_label(advice, written)}, "
        f"{seconds_text(mine)} a step against {seconds_text(theirs)}"
    )


def _versus(advice: Advice, written: PolicyAdvice, named: PolicyAdvice | None, objective: Objective) -> str:
    if named is None:
        return ", where no named candidate does"
    mine, theirs = (step_time.ranked_seconds(advice.target, p) for p in (written, named))
    timed = ""
    if mine is not None and theirs is not None:
        timed = f"{seconds_text(mine)} a step against {seconds_text(theirs)}; "
    return (
        f", better by {objective.words} than {_label(advice, named)} ({_size(advice, named)}; {timed}recomputes "
        f"{format_flops(written.recompute_flops)} against {format_flops(named.recompute_flops)})"
    )
