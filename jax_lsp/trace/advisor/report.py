"""The advice as text: its heading, a row per policy, a line per residual, and all of it as
Markdown (the editor's "Compare policies", `jax-lsp advise --output-format markdown`). The
terminal's table is `cli/output/advisor_table.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jax_lsp.trace.advisor import fastest, runs
from jax_lsp.trace.advisor.advice import (
    REASONS,
    Advice,
    NoEffect,
    PolicyAdvice,
    Residual,
    grouped,
    relative,
)
from jax_lsp.trace.advisor.runs import measured_step
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops
from jax_lsp.trace.advisor.user_call import UserCall

NO_EFFECT_REASONS = {  # why a name the policy lists changes nothing (docs/advise.md)
    "not_produced": "no checkpoint_name of it runs inside the checkpoint",
    "not_needed": "the backward pass never reads the value it names",
    "kept_otherwise": "the rest of the policy keeps the same residuals without it",
    "new_remat": "ignored under jax_remat3 on this release (it keeps what nothing_saveable keeps)",
}


def policy_summary(policy: PolicyAdvice) -> str:
    """``saves 5 arrays: 2 KiB computed, 4 KiB of arguments (+1 KiB on host) · recomputes 4.3
    GFLOP``: the residuals, what the policy keeps, what the step holds anyway."""
    count = len(policy.residuals)
    text = (
        f"saves {count} array{'s' if count != 1 else ''}: {format_bytes(policy.computed_bytes)} computed, "
        f"{format_bytes(policy.argument_bytes)} of arguments"
    )
    if policy.host_bytes:
        text += f" (+{format_bytes(policy.host_bytes)} on host)"
    return f"{text} · recomputes {format_flops(policy.recompute_flops)}"


def no_effect_reason(entry: NoEffect, root: Path | None) -> str:
    """``'mlpwo' (saved): the backward pass never reads the value it names``"""
    why = NO_EFFECT_REASONS.get(entry.reason, entry.reason)
    if entry.reason == "not_produced":
        places = ", ".join(f"{relative(p, root)}:{n}" for p, n in entry.tagged_outside)
        why += f" (tagged outside it at {places})" if places else " (tagged nowhere the example runs)"
    return f"{entry.name!r} ({entry.role}): {why}"


def host_traffic(policy: PolicyAdvice) -> str:
    """``moves 4 MiB to the host and 4 MiB back per step``: what an offloading policy's residuals
    cost in transfers (each leaves the device in the forward pass and comes back for the
    backward pass); empty for a policy that offloads nothing."""
    if not policy.host_bytes:
        return ""
    size = format_bytes(policy.host_bytes)
    return f"moves {size} to the host and {size} back per step"


def _where(residual: Residual, root: Path | None) -> str:
    if residual.path is None:
        return ""
    return f"{relative(residual.path, root)}:{residual.line}"


def residual_line(residual: Residual, root: Path | None, count: int = 1) -> str:
    """``f32[8,32] 1 KiB x4 output of dot_general (mlp.py:7) · saved by the policy``:
    what it is, how many alike (`grouped`), where it was made, and why it is kept."""
    parts = [residual.label, format_bytes(residual.bytes)]
    if count > 1:
        parts.append(f"x{count}")
    if residual.memory == "host":
        parts.append("→ pinned_host")
    if residual.iterations is not None:
        parts.append(f"stacked over {residual.iterations} scan iterations")
    parts.append(residual.description)
    where = _where(residual, root)
    if where:
        parts.append(f"({where})")
    text = " ".join(parts)
    return f"{text} · {REASONS[residual.reason]}" if residual.reason is not None else text


def short_policy(policy: str) -> str:
    """``save_only_these_names('h')`` for ``jax.checkpoint_policies.save_only_these_names('h')``."""
    return policy.removeprefix("jax.checkpoint_policies.")


COLUMNS = ("saves", "computed", "arguments", "host", "peak (est.)", "recompute")
COMPILED_COLUMN = "compiled temp"  # after "peak (est.)", with --compile for the CPU
PEAK_COLUMN = "compiled peak"  # after "peak (est.)", with --compile for a TPU, and whether it fits
LEGEND = (
    "computed: what the policy keeps on the device; arguments: the parameters, inputs and "
    "constants the step holds anyway; peak (est.): the step's temporary device memory at its "
    "peak, estimated from its trace"
)
COMPILED_LEGEND = "; compiled temp: XLA's temporaries for the compiled step (memory_analysis)"
RUN_COLUMNS = ("step", "peak in use")  # last, with --run where the steps ran
RUN_LEGEND = (
    "; step: the compiled step's median time over {runs} runs on {device}, on random inputs; "
    "peak in use: the device's memory_stats() peak_bytes_in_use, the step's own where it raised "
    "the high-water mark (smallest compiled peak ran first), else ≤ the mark; on a TPU, "
    "buffers only, not XLA's temporaries"
)


def steps_ran(advice: Advice) -> bool:
    """Whether the candidates' steps ran (--run) and any answered."""
    return advice.run is not None and any(p.run is not None for p in advice.policies)


def columns(advice: Advice) -> tuple[str, ...]:
    """The table's columns: `COLUMNS`, with after the estimate the compiled temporaries when the
    advice was compiled for the CPU, the compiled peak and whether it fits a chip when compiled
    for a TPU; and the runs last where the steps ran (--run)."""
    shown: tuple[str, ...] = COLUMNS
    if advice.compiled:
        at = COLUMNS.index("peak (est.)") + 1
        added = (PEAK_COLUMN, fit_column(advice)) if advice.on_tpu else (COMPILED_COLUMN,)
        shown = (*COLUMNS[:at], *added, *COLUMNS[at:])
    if fastest.estimated(advice):
        shown = (*shown, fastest.estimate_column(advice))
    return (*shown, *RUN_COLUMNS) if steps_ran(advice) else shown


def fit_column(advice: Advice) -> str:
    """``on v5e-1``: the TPU target's column saying whether each step fits one chip."""
    return f"on {advice.target.name}" if advice.target is not None else "on the target"


def legend(advice: Advice) -> str:
    text = LEGEND
    if advice.compiled and not advice.on_tpu:
        text += COMPILED_LEGEND
    elif advice.compiled:
        text += (
            f"; compiled peak: all the step holds at once in one chip's HBM (arguments, gradients, "
            f"temporaries), XLA's peak_memory_in_bytes less its host temporaries for the step compiled "
            f"for {target_words(advice)}"
        )
    target = advice.target
    if target is not None and target.chips > 1:  # the trace is the whole step, XLA's a chip's
        text += (
            f"; on {target.chips} chips, computed, arguments, host and peak (est.) are the whole "
            "step's, all chips together (the trace is not partitioned); the compiled figures are "
            "per chip"
        )
    if fastest.estimated(advice):
        text += fastest.estimate_legend(advice)
    if steps_ran(advice) and advice.run is not None:
        runs = next((p.run.runs for p in advice.policies if p.run is not None and p.run.runs), None)
        device = f"{advice.run.device} ({advice.run.platform})" if advice.run.device else "the device"
        text += RUN_LEGEND.format(runs=runs or "several", device=device)
    return text


def target_words(advice: Advice) -> str:
    """``v5e-1 (v5e:1x1, 1 chip of 15.75 GiB; inputs replicated)``: what the steps were compiled
    for, and how the example's inputs were placed on the chips."""
    target = advice.target
    if target is None or not target.is_tpu:
        return "cpu"
    memory = chip_memory(target.memory_bytes) if target.memory_bytes is not None else "?"
    chips = f"{target.chips} chip{'s' if target.chips != 1 else ''} of {memory}"
    sharding = next((p.compiled.sharding for p in advice.policies if p.compiled is not None), None)
    placed = {"example": "; inputs sharded as the example gives them", "replicated": "; inputs replicated"}
    return f"{target.name} ({target.topology}, {chips}{placed.get(sharding or '', '')})"


def chip_memory(count: int) -> str:
    """A chip's memory as XLA states it: ``15.75 GiB`` (not rounded to three digits)."""
    return f"{count / 2**30:.4g} GiB"


def fit_cells(advice: Advice, policy: PolicyAdvice) -> list[str]:
    """The compiled peak and the fit of ``policy``'s step on a TPU target: ``["14.2 GiB", "fits"]``,
    ``["> 15.75 GiB", "does not fit by 4.1 GiB"]``, or what stopped it where it did not compile."""
    fits = advice.fits(policy)
    if policy.exhausted is not None:
        peak = f"> {chip_memory(policy.exhausted.available_bytes)}"
    else:
        peak = (
            _size(policy.compiled.device_peak_bytes) if policy.compiled is not None else _not_compiled(policy)
        )
    if fits is None:
        return [peak, "?" if policy.compiled is not None else "-"]
    return [peak, "fits" if fits else f"does not fit by {format_bytes(advice.over_bytes(policy))}"]


def run_note(advice: Advice) -> str | None:
    """``--run: ...``: why the steps did not run on an accelerator, where they did not."""
    return f"--run: {advice.run.note}" if advice.run is not None and advice.run.note else None


def _run_cells(policy: PolicyAdvice) -> list[str]:
    return [runs.step_text(policy.run), runs.peak_in_use_text(policy.run)]


def _size(count: int | None) -> str:
    if count is None:
        return "?"
    return format_bytes(count) if count else "0"


_ERROR_WIDTH = 100  # characters of a rejected candidate's error shown under the table


def policy_label(policy: PolicyAdvice, user_call: UserCall | None = None) -> str:
    """The policy, and the key that selects it where a key chooses the site's policy:
    ``dots_saveable (remat_policy='checkpoint_dots')``; JAX's default (a site without a policy)
    says what JAX makes of it. The current policy of a site in a library that makes it from the
    ``user_call``'s value: ``nothing_saveable (gradient_checkpointing="recompute")``."""
    if policy.policy == "None":
        return "None (default: nothing_saveable)"
    short = short_policy(policy.policy)
    if policy.current and user_call is not None and policy.policy != user_call.written:
        return short if user_call.carries_policy else f"{short} ({user_call.written})"
    select = policy.select
    return short if select is None else f"{short} ({select.name}={select.key!r})"


def suggestion(advice: Advice, suggested: PolicyAdvice, root: Path | None) -> tuple[str, str | None]:
    """What to do for the ``suggested`` policy, and where or why: ``("set remat_policy to
    'checkpoint_dots'", "config.py:7")`` where a key selects it, else ``("policy=...", None)``."""
    select = suggested.select
    if advice.user_call is not None:
        return advice.user_call.suggestion(
            suggested, f"{relative(advice.user_call.path, root)}:{advice.user_call.line}"
        )
    if select is not None:
        setting = advice.setting
        where = (
            f"{relative(setting.path, root)}:{setting.line}" if setting is not None else advice.setting_note
        )
        return f"set {select.name} to {select.key!r}", where
    if advice.selector is not None:
        why = f"no value of {advice.selector.expression} selects it: add it to what that key chooses from"
        return f"policy={suggested.policy}", why
    return f"policy={suggested.policy}", None


def compiled_cell(policy: PolicyAdvice) -> str:
    if policy.compiled is not None:
        return _size(policy.compiled.temp_bytes)
    return (
        _not_compiled(policy) if policy.was_compiled else ""
    )  # "": not compiled, the budget did not need it


def passed_over(advice: Advice, budget: int) -> tuple[PolicyAdvice, float] | None:
    """The candidate the budget's ranking prefers without the measured step times, and how many
    times slower than the suggestion's its step measured, where the times changed the suggestion."""
    suggested, unmeasured = advice.suggest(budget), advice.suggest(budget, by_time=False)
    if suggested is None or unmeasured is None or unmeasured is suggested:
        return None
    fast, slow = measured_step(suggested.run), measured_step(unmeasured.run)
    return (unmeasured, slow / fast) if fast and slow is not None else None


def slower_words(found: tuple[PolicyAdvice, float], name: Callable[[str], str] = short_policy) -> str:
    """``offload dots measured 3.2x slower``: a `passed_over` in words, the policy by ``name``."""
    policy, times = found
    return f"{name(policy.policy)} measured {times:.1f}x slower"


def fit_check_line(advice: Advice) -> str | None:
    """What a budget's check by compiling (`fit.py`) did, and how long it took."""
    check = advice.fit_check
    if check is None:
        return None
    count = len(check.policies)
    return (
        f"Compiled {count} candidate{'s' if count != 1 else ''} to check that the suggestion fits "
        f"({check.seconds:.1f} s): the estimated peak does not rank the candidates as XLA does."
    )


def policy_rows(advice: Advice, suggested: PolicyAdvice | None) -> list[tuple[str, ...]]:
    """(mark, policy, *COLUMNS) per policy; the mark is ``*`` on the current policy and ``+`` on
    the ``suggested`` one. A candidate JAX rejected has ``-`` in every column (`rejections`); one
    whose step did not compile, ``failed`` as its compiled temporaries, or what stopped its
    compile (``out of memory``, ``timed out``)."""
    rows = []
    compiled = advice.compiled
    estimated = fastest.estimated(advice)
    for p in advice.policies:
        mark = "*" if p.current else ("+" if p is suggested else "")
        if p.error is not None:
            rows.append((mark, policy_label(p, advice.user_call), *("-" for _ in columns(advice))))
            continue
        if not compiled:
            temp = []
        elif advice.on_tpu:
            temp = fit_cells(advice, p)
        else:
            temp = [compiled_cell(p)]
        rows.append(
            (
                mark,
                policy_label(p, advice.user_call),
                str(len(p.residuals)),
                *(format_bytes(n) if n else "0" for n in (p.computed_bytes, p.argument_bytes, p.host_bytes)),
                _size(p.peak_bytes),
                *temp,
                format_flops(p.recompute_flops),
                *([fastest.estimate_cell(advice, p)] if estimated else []),
                *(_run_cells(p) if steps_ran(advice) else []),
            )
        )
    return rows


STOPPED = {"memory": "out of memory", "timeout": "timed out", "crashed": "crashed"}


def _not_compiled(policy: PolicyAdvice) -> str:
    """The compiled temporaries' cell of a step that did not compile."""
    return STOPPED.get(policy.compile_stopped or "", "failed")


def compile_failures(advice: Advice) -> list[str]:
    """``policy: XlaRuntimeError: ...`` per candidate whose step did not compile, shortened."""
    return [
        f"{short_policy(p.policy)}: {_first_line(p.compile_error)}"
        for p in advice.policies
        if p.compile_error
    ]


def _first_line(error: str) -> str:
    first = (error.strip().splitlines() or [""])[0]
    return first[: _ERROR_WIDTH - 1].rstrip() + "…" if len(first) > _ERROR_WIDTH else first


def no_fit(advice: Advice, budget: int) -> str:
    """What a budget no candidate fits says."""
    measure = (
        "compiled peak" if advice.on_tpu else "compiled temporaries" if advice.compiled else "estimated peak"
    )
    text = f"No policy's step fits {format_bytes(budget)} at its peak ({measure})."
    failed = [p for p in advice.policies if p.compile_error]
    if failed:
        names = ", ".join(short_policy(p.policy) for p in failed)
        text += f" Not counted, as their steps did not compile (why: above): {names}."
    if any(p.compile_stopped in STOPPED for p in failed):
        text += " A larger --compile-timeout or --compile-memory-limit-mb may let the stopped ones compile."
    return text


def rejections(advice: Advice) -> list[str]:
    """``policy: TypeError: ...`` per candidate JAX rejected: its error's first line, shortened."""
    return [
        f"{short_policy(p.policy)}: {_first_line(p.error)}" for p in advice.policies if p.error is not None
    ]


NO_EFFECT_HEADING = "Names of the current policy that change nothing"


def no_effect_lines(advice: Advice, root: Path | None) -> list[str]:
    """One line per name of the current policy that changes nothing, with the reason."""
    current = advice.current
    return [no_effect_reason(n, root) for n in current.no_effect] if current is not None else []


def figures_for(advice: Advice) -> str | None:
    """``jax 0.10.2, cpu``: the JAX release and the platform the figures are for, where known."""
    if not advice.jax_version:
        return None
    return f"jax {advice.jax_version}" + (f", {advice.platform}" if advice.platform else "")


def heading(advice: Advice, root: Path | None) -> str:
    """``mlp.py:14 (example mlp.py:example · jax 0.10.2, cpu)``"""
    where = f"{relative(advice.path, root)}:{advice.line}"
    facts = [f"example {advice.example}" if advice.example else None, figures_for(advice)]
    if advice.on_tpu:
        facts.append(f"compiled for {target_words(advice)}")
    extra = " · ".join(f for f in facts if f)
    return f"{where}" + (f" ({extra})" if extra else "")


def _no_effect_markdown(advice: Advice, root: Path | None) -> list[str]:
    no_effect = no_effect_lines(advice, root)
    return ["", f"**{NO_EFFECT_HEADING}:**", "", *(f"- {line}" for line in no_effect)] if no_effect else []


def format_markdown(advice: Advice, root: Path | None, budget: int | None = None) -> str:
    """The advice as Markdown (the editor's "Compare policies", `--output-format markdown`)."""
    lines = [f"### Remat policies at `{heading(advice, root)}`", ""]
    if not advice.ok:
        lines.append(advice.message)
        lines += _no_effect_markdown(advice, root)
        return "\n".join(lines) + "\n"
    suggested = advice.suggest(budget) if budget is not None else None
    lines.append("| | policy | " + " | ".join(columns(advice)) + " |")
    lines.append("|---|---|" + "---:|" * len(columns(advice)))
    for mark, policy, *cells in policy_rows(advice, suggested):
        shown = {"*": "current", "+": "suggested"}.get(mark, "")
        lines.append(f"| {shown} | `{policy}` | " + " | ".join(cells) + " |")
    lines += ["", f"*{legend(advice)}.*"]
    quickest = fastest.fastest_line(advice, lambda policy: f"`{short_policy(policy)}`")
    lines += [f"*{quickest}.*"] if quickest else []
    uncounted = fastest.uncounted_note(advice, lambda policy: f"`{short_policy(policy)}`")
    lines += [f"*Note: {uncounted}.*"] if uncounted else []
    lines += [f"*Note: {note}.*" for note in advice.notes]
    ran = run_note(advice)
    if ran:
        lines.append(f"*{ran}.*")
    checked = fit_check_line(advice)
    lines += [f"*{checked}*"] if checked else []
    rejected = rejections(advice)
    if rejected:
        lines += ["", "**Rejected by JAX:**", ""]
        lines += [f"- {line}" for line in rejected]
    failed = compile_failures(advice)
    if failed:
        lines += ["", "**Did not compile:**", ""]
        lines += [f"- {line}" for line in failed]
    lines += _no_effect_markdown(advice, root)
    current = advice.current
    if current is not None and current.residuals:
        lines += ["", f"**The current policy keeps** ({policy_summary(current)}):", ""]
        lines += [
            f"- `{r.label}` {residual_line(r, root, count)[len(r.label) + 1 :]}"
            for r, count in grouped(current.residuals)
        ]
    if budget is not None:
        lines.append("")
        if suggested is None:
            lines.append(no_fit(advice, budget))
        else:
            action, where = suggestion(advice, suggested, root)
            detail = f" ({where})" if where else ""
            lines.append(f"**Suggested** for a budget of {format_bytes(budget)}: `{action}`{detail}")
            slower = passed_over(advice, budget)
            lines += [f"*Chosen by the measured step times: {slower_words(slower)}.*"] if slower else []
    lines += [
        "",
        "Residuals as JAX records them for the backward pass (not XLA's peak memory: that is "
        "what peak (est.) estimates, and compiled temp measures); "
        "recompute counts `dot_general`/convolution FLOPs done again in the backward pass.",
    ]
    return "\n".join(lines) + "\n"
