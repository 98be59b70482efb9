"""Which candidate's step is fastest, said under the table: measured where the steps ran
(``--run``), else predicted for the target (`step_time.py`), among those that fit when compiled,
with what it costs against the current policy and the candidates it ties with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jax_lsp.trace.advisor import runs, step_time
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.sizes import format_bytes

MEASURED_TIE = 0.03  # measured medians closer than this tie (a step's run-to-run spread)


@dataclass(frozen=True)
class Fastest:
    """The fastest candidate that fits, how its time was had, and those it ties with."""

    policy: PolicyAdvice
    seconds: float
    measured: bool  # measured by --run (else predicted)
    ties: tuple[tuple[PolicyAdvice, float], ...]  # within the error, with their times
    error: float  # the relative difference within which two times tie


def seconds_text(seconds: float) -> str:
    """``76.0 ms``, ``1.32 s``."""
    return f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"


def estimate_cell(advice: Advice, policy: PolicyAdvice) -> str:
    """The ``step (est.)`` cell: the predicted step, ``-`` where there is none."""
    found = step_time.policy_estimate(advice.target, policy)
    return seconds_text(found.seconds) if found is not None else "-"


def estimated(advice: Advice) -> bool:
    """Whether some candidate has a predicted step (the advice was compiled)."""
    return any(step_time.policy_estimate(advice.target, p) is not None for p in advice.policies)


def estimate_column(advice: Advice) -> str:
    """The column's header: ``step (est.)``, or ``cpu step (est.)`` where the prediction is the
    local CPU's time."""
    return "step (est.)" if step_time.generation_of(advice.target) else "cpu step (est.)"


def estimate_meaning(advice: Advice) -> str:
    """What the column is, for the legend under the table."""
    chip = step_time.chip_for(step_time.generation_of(advice.target))
    where = f"one chip of the {chip.name}" if chip.name != "cpu" else "this machine's CPU"
    return (
        f"the step's time predicted for {where} from its compiled program (a roofline per "
        f"operation, loops counted by their trips), within about {chip.error:.0%}"
    )


def _fits(advice: Advice, policy: PolicyAdvice) -> bool:
    fits = advice.fits(policy)
    return policy.error is None and policy.compiled is not None and fits is not False


def fastest(advice: Advice) -> Fastest | None:
    """The fastest candidate that fits when compiled: by the measured steps where every fitting
    candidate's step ran, else by the predicted ones; None where no time is known, or where some
    candidate was not compiled (the budget's check compiles only some: --compile compiles all)."""
    if not all(p.was_compiled or p.error is not None for p in advice.policies):
        return None
    fitting = [p for p in advice.policies if _fits(advice, p)]
    measured = bool(fitting) and all(runs.measured_step(p.run) is not None for p in fitting)
    times: dict[int, float] = {}
    for policy in fitting:
        if measured:
            seconds = runs.measured_step(policy.run)
        else:
            found = step_time.policy_estimate(advice.target, policy)
            seconds = found.seconds if found is not None else None
        if seconds is not None:
            times[id(policy)] = seconds
    if not times:
        return None
    best = min((p for p in fitting if id(p) in times), key=lambda p: times[id(p)])
    error = MEASURED_TIE if measured else step_time.chip_for(step_time.generation_of(advice.target)).error
    ties = tuple(
        (p, times[id(p)])
        for p in fitting
        if p is not best and id(p) in times and step_time.tie(times[id(p)], times[id(best)], error)
    )
    return Fastest(best, times[id(best)], measured, ties, error)


def fastest_line(advice: Advice, name: Callable[[str], str]) -> str | None:
    """``Fastest that fits (predicted for v5e-1): dots_with_no_batch_dims_saveable, 76.0 ms: 13%
    faster than the current, +0.8 GiB compiled peak; ties within 10%: dots_saveable (79.3 ms)``;
    None where no step time is known. ``name`` shortens a policy's expression."""
    found = fastest(advice)
    if found is None:
        return None
    text = f"Fastest that fits ({timed_how(advice, found.measured)}): {name(found.policy.policy)}, {seconds_text(found.seconds)}"
    current = advice.current
    against = _against_current(advice, found, current) if current is not None else None
    if against:
        text += f": {against}"
    if found.ties:
        tied = ", ".join(f"{name(p.policy)} ({seconds_text(s)})" for p, s in found.ties)
        text += f"; ties within {found.error:.0%}: {tied}"
    return text


def timed_how(advice: Advice, measured: bool) -> str:
    """``measured`` (by --run), or ``predicted for v5e-1``: how the step times compared were had."""
    return "measured" if measured else f"predicted for {advice.target.name if advice.target else 'cpu'}"


def times_measured(advice: Advice) -> bool:
    """Whether the candidates are compared by their measured steps: every fitting one ran."""
    found = fastest(advice)
    return found is not None and found.measured


def _against_current(advice: Advice, found: Fastest, current: PolicyAdvice) -> str | None:
    """``13% faster than the current, +0.8 GiB compiled peak``; ``the current policy`` where it
    is the fastest; None where the current one's time is not known."""
    if found.policy is current:
        return "the current policy"
    if found.measured:
        theirs = runs.measured_step(current.run)
    else:
        estimate = step_time.policy_estimate(advice.target, current)
        theirs = estimate.seconds if estimate is not None else None
    if theirs is None or theirs <= 0:
        return None
    faster = (theirs - found.seconds) / theirs
    text = f"{faster:.0%} faster than the current" if faster > 0 else "no faster than the current"
    mine, its = _peak(advice, found.policy), _peak(advice, current)
    if mine is not None and its is not None:
        sign = "+" if mine >= its else "-"
        text += f", {sign}{format_bytes(abs(mine - its))} compiled {'peak' if advice.on_tpu else 'temp'}"
    return text


def _peak(advice: Advice, policy: PolicyAdvice) -> int | None:
    """The compiled peak on a TPU (in the chip's HBM: the `compiled peak` column); the compiled
    temporaries on the CPU (whose peak counts only the arguments and outputs)."""
    return advice.budgeted_bytes(policy) if policy.compiled is not None else None


def lens_words(advice: Advice, policy: PolicyAdvice, name: Callable[[str], str]) -> str | None:
    """``step (est.) 85.7 ms, fastest that fits: dots_with_no_batch_dims_saveable 78.8 ms`` (or
    ``step 86.9 ms measured``; ``..., the fastest that fits``) for the editor's lens; None where
    ``policy``'s step time is not known."""
    measured = runs.measured_step(policy.run)
    estimate = step_time.policy_estimate(advice.target, policy)
    if measured is not None:
        text = f"step {seconds_text(measured)} measured"
    elif estimate is not None:
        cpu = "" if step_time.generation_of(advice.target) else " on this CPU"
        text = f"step (est.) {seconds_text(estimate.seconds)}{cpu}"
    else:
        return None
    found = fastest(advice)
    if found is None:
        return text
    if found.policy is policy:
        return f"{text}, the fastest that fits"
    fastest_words = f"{name(found.policy.policy)} {seconds_text(found.seconds)}"
    if any(p is policy for p, _ in found.ties):
        return f"{text}, a tie with the fastest that fits: {fastest_words}"
    return f"{text}, fastest that fits: {fastest_words}"


def time_and_peak(advice: Advice) -> list[tuple[PolicyAdvice, float, int]]:
    """``(candidate, step seconds, compiled peak)`` of each compiled candidate whose time is
    known: the points of the chart of step time against compiled peak (measured steps where every
    fitting candidate's ran, else predicted)."""
    measured = times_measured(advice)
    points = []
    for policy in advice.policies:
        peak = _peak(advice, policy)
        if measured:
            seconds = runs.measured_step(policy.run)
        else:
            estimate = step_time.policy_estimate(advice.target, policy)
            seconds = estimate.seconds if estimate is not None else None
        if peak is not None and seconds is not None and policy.error is None:
            points.append((policy, seconds, peak))
    return points


def pareto_front(advice: Advice) -> list[PolicyAdvice]:
    """The candidates no other beats on both step time and compiled peak (at least as fast and
    as small, and better in one), smallest peak first: the trade-off's front."""
    points = time_and_peak(advice)
    front = [
        (policy, seconds, peak)
        for policy, seconds, peak in points
        if not any(
            s <= seconds and p <= peak and (s < seconds or p < peak)
            for other, s, p in points
            if other is not policy
        )
    ]
    return [policy for policy, _, _ in sorted(front, key=lambda point: (point[2], point[1]))]


def uncounted_note(advice: Advice, name: Callable[[str], str]) -> str | None:
    """``step (est.) counts once a loop whose trip count is not static, in nothing_saveable and
    dots_saveable: their steps are predicted short``; None where every loop was counted."""
    found = [
        name(p.policy)
        for p in advice.policies
        if p.compiled is not None and p.compiled.cost is not None and p.compiled.cost.uncounted_loops
    ]
    if not found:
        return None
    return (
        f"{estimate_column(advice)} counts once a loop whose trip count is not static (a while_loop "
        f"on a traced bound), in {', '.join(found)}: their steps are predicted short"
    )
