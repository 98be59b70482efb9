"""What the editor says of an advice: the lens's summary, why the quick fix suggests a policy
(its budget, target, host traffic, and the measured step times where they chose it), the log line."""

from __future__ import annotations

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.fastest import lens_words
from jax_lsp.trace.advisor.fused import doubt_words
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.report import figures_for, host_traffic, passed_over, policy_summary, slower_words
from jax_lsp.trace.advisor.sizes import format_bytes
from jax_lsp.trace.advisor.table import short_policy


def lens_summary(advice: Advice, current: PolicyAdvice) -> str:
    """The current policy's `policy_summary`, then its step's peak: compiled for a TPU
    (``compiled peak 14.2 GiB, fits v5e-1``), else estimated; its step time where known (measured,
    else predicted for the target) and the fastest that fits; then the JAX release and the
    platform of ``advice``'s figures."""
    parts = [policy_summary(current)]
    fits = advice.fits(current)
    if fits is not None and advice.target is not None:
        peak = current.compiled.device_peak_bytes if current.compiled is not None else None
        size = format_bytes(peak) if peak is not None else "over the chip"
        verdict = f"fits {advice.target.name}" if fits else f"does not fit {advice.target.name}"
        parts.append(f"compiled peak {size}, {verdict}")
    elif current.peak_bytes is not None:
        doubt = doubt_words(advice, current)
        parts.append(f"peak (est.) {format_bytes(current.peak_bytes)}" + (f", {doubt}" if doubt else ""))
    step = lens_words(advice, current, short_policy)
    parts += [step] if step else []
    return " · ".join([*parts, *filter(None, [figures_for(advice)]), *filter(None, [not_compiled(advice)])])


def target_name(advice: Advice) -> str:
    """What the figures are for: the TPU the steps were compiled for, else the platform the
    agent advised on (where a TPU target could not be compiled for, too: `not_compiled`)."""
    if advice.on_tpu and advice.target is not None:
        return advice.target.name
    return advice.platform or "this machine"


def not_compiled(advice: Advice) -> str | None:
    """Why a TPU target's figures are not there: ``not compiled for v5e-1: no libtpu in
    /venv/bin/python`` (the agent's note says so); None where nothing says so."""
    if advice.on_tpu:
        return None
    note = next((n for n in advice.notes if n.startswith("compiling for ") and " needs libtpu, " in n), None)
    if note is None:
        return None
    name, rest = note.removeprefix("compiling for ").split(" needs libtpu, which ", 1)
    return f"not compiled for {name}: no libtpu in {rest.split(' lacks', 1)[0]}"


def budget_meaning(advice: Advice, budget: int) -> str:
    """What ``budget`` is compared with for ``advice``'s target (docs/advise.md)."""
    size = format_bytes(budget)
    if advice.on_tpu and advice.target is not None:
        return (
            f"the {size} budget is compared with everything the compiled step holds on one "
            f"{advice.target.name} chip at once (XLA's peak: arguments, gradients, temporaries)"
        )
    if advice.compiled:
        return (
            f"the {size} budget is compared with the compiled step's temporaries on "
            f"{advice.platform or 'this machine'} (not the arguments and gradients it holds anyway)"
        )
    return f"the {size} budget is compared with the estimated peak of the step's temporaries"


def log_line(advice: Advice, site: str, example: str | None) -> str:
    """``mlp.py:14 (example mlp.py:example) in 1.4 s: saves 5 arrays...``, for the log."""
    took = f" in {advice.duration_s:.1f} s" if advice.duration_s is not None else ""
    current = advice.current
    outcome = (
        lens_summary(advice, current)
        if advice.ok and current is not None
        else f"{advice.status}: {advice.message}"
    )
    return f"{site} (example {example or 'none'}){took}: {outcome}"


def why_suggested(advice: Advice, suggested: PolicyAdvice, budget: int | None) -> str:
    """``(peak (est.) 5 KiB within the 6 KiB budget, on cpu)``: what the suggestion was chosen
    for, what it moves to the host and back each step when it offloads, and the candidate the
    measured step times passed over (``offload dots measured 3.2x slower``)."""
    size = advice.budgeted_bytes(suggested)
    measure = "compiled" if advice.compiled else "peak (est.)"
    text = f"({measure} {format_bytes(size or 0)} within the {format_bytes(budget or 0)} budget"
    text += f", on {target_name(advice)}"
    if suggested.host_bytes:
        text += f"; {host_traffic(suggested)}"
    slower = passed_over(advice, budget) if budget is not None else None
    if slower is not None:
        text += f"; {slower_words(slower)}"
    return text + ")"
