"""The search for a written policy (`advise --write-policy`): which of a site's values to keep on
the device, offload to the host or recompute, so that the step compiles within the budget and is
the fastest predicted (docs/advise.md, "A policy written for a budget").

1. The values a policy decides on are found in one trace of the ready-made policies and grouped
   by their `checkpoint_name` tag or by the expression that made them (`values.plan_tags`).
2. One trace, with every group tagged, of the policy keeping every group and of each keeping all
   but one, gives each group's bytes and the FLOPs the backward pass does again without it.
3. The groups are ordered by those FLOPs per byte, the cheapest to recompute first, and a chain
   of policies evicts them in that order: position k keeps all but the first k. One trace of
   every position gives its recompute and kept bytes (evicting two groups may cost more than
   each alone); a position that another beats in both is dropped, leaving the front.
   The compiled size falls along the front; the point where the step starts to fit the budget is
   found by compiling a few points (the first guessed from the named candidates' compiled sizes
   against their kept bytes, then halving), each with the files exactly as its edit would leave
   them.
4. Where the objective is a step time (`by_step_time`), the front's points past the first that
   fits are compiled while the predicted step falls (keeping less is less memory traffic), and,
   where the target has host memory, the best of them is also compiled with its evicted values
   that cost FLOPs offloaded instead of recomputed.
5. Of the compiled positions that fit, the best by the objective; it is compared with the best
   named candidate that fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.write.requests import SiteRequests
from jax_lsp.trace.advisor.write.values import FINDERS, TagPlan, ValueGroup, plan_tags

POLICIES = "jax.checkpoint_policies."
MAX_CHAIN_COMPILES = 3  # the compiles that look for where the chain starts to fit
MAX_WALK_COMPILES = 2  # with a step time: the compiles past it, while the step falls


@dataclass(frozen=True)
class Objective:
    """What a written policy minimises among the compiled candidates that fit: ``key`` of a
    candidate (smaller is better); ``timed``: it is a predicted step time, which can tell an
    offload from a recompute (without one, offloading is never chosen over recomputing)."""

    key: Callable[[PolicyAdvice], tuple[float, ...]]
    timed: bool
    words: str  # what it is, for people: "predicted step time", "recompute"
    # whether two candidates are too close for the objective to order (a model's stated error)
    tie: Callable[[PolicyAdvice, PolicyAdvice], bool] = lambda a, b: False

    def better(self, a: PolicyAdvice, b: PolicyAdvice) -> bool:
        """Whether ``a`` beats ``b``: smaller by ``key``, and not a tie."""
        return self.key(a) < self.key(b) and not self.tie(a, b)


def by_recompute(advice: Advice) -> Objective:
    """Until a step time is predicted: the advisor's own order (`Advice.preference`), then the
    compiled size."""

    def key(policy: PolicyAdvice) -> tuple[float, ...]:
        size = advice.budgeted_bytes(policy)
        offloads, recompute = advice.preference(policy)
        return (float(offloads), float(recompute), float(size if size is not None else "inf"))

    return Objective(key, False, "recompute, then compiled size")


def by_step_time(advice: Advice) -> Objective | None:
    """The step time the advisor ranks by (`step_time.ranked_seconds`: measured where the steps
    ran, else predicted for the advice's target), then the compiled size; two candidates within
    the model's stated error tie. None for a target that is no TPU (the CPU's model is nominal:
    within its stated error of 50% nearly every candidate ties, so recompute decides there), or
    where no named candidate has a step time (no compile's cost)."""
    target = advice.target
    if target is None or not target.is_tpu:
        return None
    if not any(step_time.ranked_seconds(target, p) is not None for p in advice.policies):
        return None
    error = step_time.chip_for(step_time.generation_of(target)).error

    def key(policy: PolicyAdvice) -> tuple[float, ...]:
        seconds, size = step_time.ranked_seconds(target, policy), advice.budgeted_bytes(policy)
        return (seconds if seconds is not None else math.inf, float(size) if size is not None else math.inf)

    def tie(a: PolicyAdvice, b: PolicyAdvice) -> bool:
        first, second = step_time.ranked_seconds(target, a), step_time.ranked_seconds(target, b)
        return first is not None and second is not None and step_time.tie(first, second, error)

    return Objective(key, True, "predicted step time", tie)


@dataclass(frozen=True)
class GroupCost:
    """A group's bytes on the device while kept, and the FLOPs recomputed without it (the other
    groups kept)."""

    group: ValueGroup
    bytes: int
    recompute: int

    @property
    def flops_per_byte(self) -> float:
        return self.recompute / self.bytes


@dataclass(frozen=True)
class Point:
    """A position of the chain, traced: the names it keeps, the FLOPs its backward pass does
    again and the device bytes it keeps."""

    kept: tuple[str, ...]
    recompute: int
    computed: int

    def beats(self, other: Point) -> bool:
        """No worse in either figure and better in one."""
        return (
            self.recompute <= other.recompute
            and self.computed <= other.computed
            and (self.recompute, self.computed) != (other.recompute, other.computed)
        )


@dataclass(frozen=True)
class Probe:
    """One written candidate compiled: the names it keeps and offloads, and its entry (or why it
    has none)."""

    kept: tuple[str, ...]
    offloaded: tuple[str, ...]
    entry: PolicyAdvice | None
    error: str | None
    size: int | None  # what the budget is compared with (`Advice.budgeted_bytes`)

    @property
    def expression(self) -> str:
        return policy_text(self.kept, self.offloaded)

    def fits(self, budget: int) -> bool:
        return self.size is not None and self.size <= budget


def policy_text(kept: Sequence[str], offloaded: Sequence[str] = ()) -> str:
    """The ordinary JAX policy keeping ``kept`` on the device and offloading ``offloaded``."""
    if not offloaded:
        return f"{POLICIES}save_only_these_names({', '.join(repr(n) for n in kept)})"
    return (
        f"{POLICIES}save_and_offload_only_these_names(names_which_can_be_saved={list(kept)!r}, "
        f"names_which_can_be_offloaded={list(offloaded)!r}, offload_src='device', offload_dst='pinned_host')"
    )


@dataclass
class Search:
    """One site's search for ``budget``: its requests, the named candidates' advice (compiled),
    the objective, and what it found on the way."""

    requests: SiteRequests
    advice: Advice
    budget: int
    objective: Objective
    plan: TagPlan | None = None
    costs: list[GroupCost] | None = None
    probes: list[Probe] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    front: list[Point] = field(default_factory=list)  # the chain's positions no other beats
    traced: dict[str, PolicyAdvice] = field(default_factory=dict)  # by policy text, with every tag
    chosen: Probe | None = None  # the best that fits, its idle names dropped (`_choose`)

    def run(self) -> Search:
        """Find the groups, their costs, the chain's front, and compile its points (`best`)."""
        begun = time.perf_counter()
        try:
            self._groups()
            if self.costs:
                self._front()
            if self.front:
                self._chain()
                self._choose()
        finally:
            self.seconds = time.perf_counter() - begun
        return self

    def _traced(self, texts: list[str]) -> dict[str, PolicyAdvice] | None:
        """The entries of ``texts`` traced with every group tagged, those traced before not again
        (None: the trace failed, and ``error`` says why)."""
        assert self.plan is not None
        missing = [text for text in texts if text not in self.traced]
        if missing:
            names = [g.name for g in self.plan.groups]
            overlay = self.plan.overlay(names, self.requests.path, self.requests.line)
            answer = self.requests.trace(missing, overlay)
            traced = Advice.from_agent(answer, self.requests.path, self.requests.line)
            self.traced.update(
                (p.policy, p) for p in traced.policies if p.error is None and p.recompute_flops is not None
            )
            if not traced.ok or texts[0] not in self.traced:
                self.error = f"the tagged values could not be traced: {traced.message or 'no figures'}"
                return None
        return {text: self.traced[text] for text in texts if text in self.traced}

    def _in_order(self, names: Sequence[str]) -> tuple[str, ...]:
        """``names`` in the order of their groups (a policy's text does not depend on the order
        they were evicted in)."""
        order = {g.name: i for i, g in enumerate(self.plan.groups if self.plan else ())}
        return tuple(sorted(names, key=lambda n: order.get(n, len(order))))

    def _groups(self) -> None:
        """The groups (`values.plan_tags`) and their costs, the cheapest to evict first."""
        answer = self.requests.trace(list(FINDERS))
        if not isinstance(answer, dict) or answer.get("status") != "ok":
            self.error = f"the values could not be traced: {_failure(answer)}"
            return
        self.plan = plan_tags(answer, self.requests.root, self.advice.names)
        names = [g.name for g in self.plan.groups]
        if not names:
            self.error = "no value of the site's checkpoint is a policy's choice that a tag can name"
            return
        texts = [policy_text(names)] + [policy_text([n for n in names if n != name]) for name in names]
        entries = self._traced(texts)
        if entries is None:
            return
        whole = entries[texts[0]]
        self.costs = []
        for group, text in zip(self.plan.groups, texts[1:]):
            kept = sum(r.bytes for r in whole.residuals if r.name == group.name and r.memory == "device")
            without = entries.get(text)
            if kept and without is not None:  # a group that keeps nothing: its tag would change nothing
                extra = max((without.recompute_flops or 0) - (whole.recompute_flops or 0), 0)
                self.costs.append(GroupCost(group, kept, extra))
        self.costs.sort(key=lambda c: (c.flops_per_byte, -c.bytes))

    def _front(self) -> None:
        """The chain's positions traced (one trace of them all: the costs of evicting several
        groups do not add up), those that another beats in both recompute and kept bytes left
        out: the front, the most kept first."""
        names = [c.group.name for c in self.costs or []]
        chain = [self._in_order(names[position:]) for position in range(len(names) + 1)]
        entries = self._traced([policy_text(kept) for kept in chain])
        if entries is None:
            return
        points = [
            Point(kept, entry.recompute_flops or 0, entry.computed_bytes)
            for kept in chain
            if (entry := entries.get(policy_text(kept))) is not None
        ]
        self.front = sorted(
            (p for p in points if not any(o.beats(p) for o in points)),
            key=lambda p: (-p.computed, p.recompute),
        )

    def _chain(self) -> None:
        """Compile points of the front, halving the interval between the last known not to fit
        and the first known to fit, until they meet or the compiles run out; then, where the
        objective can tell, the fitting point with its costly evicted values offloaded."""
        last = len(self.front) - 1
        failing, fitting = -1, last + 1  # last + 1: none known to fit yet
        index = self._guess()
        for compiled in range(MAX_CHAIN_COMPILES):
            fits = self._compile(self.front[index].kept).fits(self.budget)
            failing, fitting = (failing, index) if fits else (index, fitting)
            if fitting - failing <= 1:
                break
            # the guess's neighbour first (the guess is near where it starts to fit), then halve
            index = (index - 1 if fits else index + 1) if compiled == 0 else (failing + fitting) // 2
            index = min(index, last)
            if not failing < index < fitting:
                break
        if fitting <= last and self.objective.timed:
            fitting = self._walk(fitting, last)
        target = self.requests.target
        if fitting <= last and self.objective.timed and target is not None and target.is_tpu:
            kept = self.front[fitting].kept
            evicted = self._in_order(
                [c.group.name for c in self.costs or [] if c.recompute and c.group.name not in kept]
            )
            if evicted:
                self._compile(kept, evicted)

    def _walk(self, index: int, last: int) -> int:
        """Where the objective is a step time: the front past its first fitting point (less kept,
        more recomputed: less memory traffic), compiled while the objective improves, at most
        `MAX_WALK_COMPILES` points; the best point's index."""
        best = self._compile(self.front[index].kept)
        for _ in range(MAX_WALK_COMPILES):
            if index >= last or best.entry is None:
                break
            probe = self._compile(self.front[index + 1].kept)
            if (
                probe.entry is None
                or not probe.fits(self.budget)
                or not self.objective.better(probe.entry, best.entry)
            ):
                break
            best, index = probe, index + 1
        return index

    def _guess(self) -> int:
        """The first point of the front whose kept bytes the named candidates' compiled sizes
        against their kept bytes (a line through them) put within the budget; the last where none
        is."""
        points = [
            (p.computed_bytes, size)
            for p in self.advice.policies
            if p.error is None and p.host_bytes == 0 and (size := self.advice.budgeted_bytes(p)) is not None
        ]
        slope, intercept = _line(points)
        fitting = (i for i, p in enumerate(self.front) if intercept + slope * p.computed <= self.budget)
        return next(fitting, len(self.front) - 1)

    def _compile(self, kept: tuple[str, ...], offloaded: tuple[str, ...] = ()) -> Probe:
        text = policy_text(kept, offloaded)
        for probe in self.probes:
            if probe.expression == text:
                return probe
        plan = self.plan
        assert plan is not None
        overlay = plan.overlay([*kept, *offloaded], self.requests.path, self.requests.line)
        answer = self.requests.compile(text, overlay)
        if isinstance(answer, str):
            probe = Probe(kept, offloaded, None, answer, None)
        else:
            probe = Probe(kept, offloaded, answer, None, self.advice.budgeted_bytes(answer))
        self.probes.append(probe)
        return probe

    def best(self) -> Probe | None:
        """The compiled written candidate that fits and is best by the objective, every name it
        lists changing what is kept (`_choose`)."""
        return self.chosen

    def _choose(self) -> None:
        """The best fitting probe, less the names that change nothing in it (a value two tags
        name, a value kept anyway), compiled again where it lost any: JAX191 finds none in it."""
        fitting = [p for p in self.probes if p.fits(self.budget) and p.entry is not None]
        best = min(fitting, key=lambda p: self.objective.key(p.entry), default=None)  # type: ignore[arg-type]
        if best is None or best.entry is None:
            return
        kept, offloaded = self._working(list(best.kept), list(best.offloaded), best.entry)
        pruned = self._compile(tuple(kept), tuple(offloaded))
        self.chosen = pruned if pruned.fits(self.budget) and pruned.entry is not None else best

    def _working(
        self, kept: list[str], offloaded: list[str], entry: PolicyAdvice
    ) -> tuple[list[str], list[str]]:
        """``kept`` and ``offloaded`` without the names that change nothing: one trace of the
        policy without each name finds those idle alone; all of them are dropped where that keeps
        the same, else each in turn where it still does (two tags of one value: one stays)."""
        base_text = policy_text(kept, offloaded)

        def less(names: set[str]) -> str:
            return policy_text([k for k in kept if k not in names], [o for o in offloaded if o not in names])

        traced = self._traced([base_text, *(less({n}) for n in [*kept, *offloaded])]) or {}
        base = traced.get(base_text, entry)
        idle = [n for n in [*kept, *offloaded] if (e := traced.get(less({n}))) is not None and _same(e, base)]
        dropped: set[str] = set()
        for trial in ([set(idle)] if idle else []) + [{n} for n in idle]:
            candidate = less(dropped | trial)
            found = (self._traced([candidate]) or {}).get(candidate)
            if found is not None and _same(found, base):
                dropped |= trial
            if dropped >= set(idle):
                break
        return [k for k in kept if k not in dropped], [o for o in offloaded if o not in dropped]


def _same(a: PolicyAdvice, b: PolicyAdvice) -> bool:
    """The same residuals (shapes, dtypes, memories) and the same recompute."""
    return a.kept == b.kept and a.recompute_flops == b.recompute_flops


def _line(points: list[tuple[int, int]]) -> tuple[float, float]:
    """The least-squares line through ``points``: (slope, intercept); slope 1 through the mean
    where the points cannot tell (fewer than two distinct abscissas)."""
    if not points:
        return 1.0, 0.0
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 1.0, mean_y - mean_x
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread
    slope = max(slope, 0.0)
    return slope, mean_y - slope * mean_x


def _failure(answer: object) -> str:
    if isinstance(answer, dict):
        return str(answer.get("message") or answer.get("status"))
    return str(getattr(answer, "message", answer))
