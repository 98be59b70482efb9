"""The advice in sentences (its heading, each policy's summary, the suggestion, what did not
compile) and all of it as Markdown (`jax-lsp advise --output-format markdown`). The table every
view renders is `table.py`; the list of what the current policy keeps, `residual_list.py`; the
terminal's report is `cli/output/advisor_table.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.fastest import fastest_line, uncounted_note
from jax_lsp.trace.advisor.fused import fusible_note
from jax_lsp.trace.advisor.policy_advice import NoEffect, PolicyAdvice
from jax_lsp.trace.advisor.residual_list import SHOWN, residual_rows
from jax_lsp.trace.advisor.runs import measured_step
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops
from jax_lsp.trace.advisor.table import STOPPED, policy_table, short_policy, target_words

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


def run_note(advice: Advice) -> str | None:
    """``--run: ...``: why the steps did not run on an accelerator, where they did not."""
    return f"--run: {advice.run.note}" if advice.run is not None and advice.run.note else None


def notes(advice: Advice, name: Callable[[str], str]) -> list[str]:
    """The sentences under every view's table: the fastest candidate that fits (`fastest.py`),
    the loops its estimate could not count, the estimates that may be far over (`fused.py`), what
    this JAX release hides, why the steps did not run; policies by ``name``."""
    quickest = fastest_line(advice, name)
    uncounted = uncounted_note(advice, name)
    over = fusible_note(advice, name)
    found = [quickest, *(f"Note: {text}" for text in (uncounted, over) if text), chips_note(advice)]
    return [text for text in [*found, *(f"Note: {n}" for n in advice.notes), run_note(advice)] if text]


def chips_note(advice: Advice) -> str | None:
    """On a target of several chips: that the traced figures are the whole step's, the compiled
    ones a chip's (the trace is not partitioned)."""
    target = advice.target
    if target is None or target.chips <= 1:
        return None
    return (
        f"Note: on {target.chips} chips, computed, arguments, host and peak (est.) are the whole step's, "
        "all chips together (the trace is not partitioned); the compiled figures are per chip"
    )


_ERROR_WIDTH = 100  # characters of a rejected candidate's error shown under the table


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


def site_words(advice: Advice, root: Path | None) -> str:
    """``mlp.py:14``: the site, its path relative to ``root``."""
    return f"{relative(advice.path, root)}:{advice.line}"


def heading_facts(advice: Advice) -> str:
    """``example mlp.py:example · jax 0.10.2, cpu · compiled for v5e-1 (...)``: what the figures
    are for."""
    facts = [f"example {advice.example}" if advice.example else None, figures_for(advice)]
    if advice.on_tpu:
        facts.append(f"compiled for {target_words(advice)}")
    return " · ".join(f for f in facts if f)


def heading(advice: Advice, root: Path | None) -> str:
    """``mlp.py:14 (example mlp.py:example · jax 0.10.2, cpu)``"""
    facts = heading_facts(advice)
    return site_words(advice, root) + (f" ({facts})" if facts else "")


def _no_effect_markdown(advice: Advice, root: Path | None) -> list[str]:
    no_effect = no_effect_lines(advice, root)
    return ["", f"**{NO_EFFECT_HEADING}:**", "", *(f"- {line}" for line in no_effect)] if no_effect else []


def format_markdown(
    advice: Advice, root: Path | None, budget: int | None = None, residuals: int | None = SHOWN
) -> str:
    """The advice as Markdown (`--output-format markdown`): the table (`table.py`) with its
    legend, what did not compile, what the current policy keeps (the largest ``residuals`` groups,
    None: every one) and the suggestion for ``budget``."""
    lines = [f"### Remat policies at `{heading(advice, root)}`", ""]
    if not advice.ok:
        lines.append(advice.message)
        lines += _no_effect_markdown(advice, root)
        return "\n".join(lines) + "\n"
    table = policy_table(advice, budget)
    lines.append("| | policy | " + " | ".join(table.words) + " |")
    lines.append("|---|---|" + "---:|" * len(table.headers))
    lines += [f"| {row.mark} | `{row.name}` | " + " | ".join(row.cells) + " |" for row in table.rows]
    lines += ["", f"*{'; '.join(table.legend())}.*"]
    lines += [f"*{note}.*" for note in notes(advice, lambda policy: f"`{short_policy(policy)}`")]
    checked = fit_check_line(advice)
    lines += [f"*{checked}*"] if checked else []
    for title, found in (
        ("Rejected by JAX", rejections(advice)),
        ("Did not compile", compile_failures(advice)),
    ):
        lines += ["", f"**{title}:**", "", *(f"- {line}" for line in found)] if found else []
    lines += _no_effect_markdown(advice, root)
    current = advice.current
    if current is not None and current.residuals:
        lines += [
            "",
            f"**The current policy keeps** ({policy_summary(current)}), by the line that made it:",
            "",
        ]
        kept, rest = residual_rows(current.residuals, root, residuals)
        lines += [f"- `{where}` {size}: {what}" for where, size, what in kept]
        lines += [f"- {rest}"] if rest else []
    if budget is not None:
        lines.append("")
        suggested = table.suggested
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
        "Residuals as JAX records them for the backward pass: not XLA's peak memory, which peak (est.) "
        "estimates and the compiled columns measure.",
    ]
    return "\n".join(lines) + "\n"
