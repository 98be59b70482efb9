"""The advice as text: its heading, a row per policy, a line per residual, and all of it as
Markdown (the editor's "Compare policies", `jax-lsp advise --output-format markdown`). The
terminal's table is `cli/output/advisor_table.py`.
"""

from __future__ import annotations

from pathlib import Path

from jax_lsp.trace.advisor.advice import (
    Advice,
    PolicyAdvice,
    Residual,
    format_bytes,
    format_flops,
    relative,
)


def _where(residual: Residual, root: Path | None) -> str:
    if residual.path is None:
        return ""
    return f"{relative(residual.path, root)}:{residual.line}"


def residual_line(residual: Residual, root: Path | None) -> str:
    """``f32[8,32] 1 KiB output of dot_general (mlp.py:7)``: what it is, and where it was made."""
    parts = [residual.label, format_bytes(residual.bytes)]
    if residual.memory == "host":
        parts.append("→ pinned_host")
    if residual.iterations is not None:
        parts.append(f"stacked over {residual.iterations} scan iterations")
    parts.append(residual.description)
    where = _where(residual, root)
    if where:
        parts.append(f"({where})")
    return " ".join(parts)


def short_policy(policy: str) -> str:
    """``save_only_these_names('h')`` for ``jax.checkpoint_policies.save_only_these_names('h')``."""
    return policy.removeprefix("jax.checkpoint_policies.")


COLUMNS = ("saves", "computed", "arguments", "host", "recompute")
LEGEND = (
    "computed: what the policy keeps on the device; arguments: the parameters, inputs and "
    "constants the step holds anyway"
)
_ERROR_WIDTH = 100  # characters of a rejected candidate's error shown under the table


def policy_label(policy: PolicyAdvice) -> str:
    """The policy, and the key that selects it where a key chooses the site's policy:
    ``dots_saveable (remat_policy='checkpoint_dots')``."""
    short = short_policy(policy.policy)
    select = policy.select
    return short if select is None else f"{short} ({select.name}={select.key!r})"


def suggestion(advice: Advice, suggested: PolicyAdvice, root: Path | None) -> tuple[str, str | None]:
    """What to do for the ``suggested`` policy, and where or why: ``("set remat_policy to
    'checkpoint_dots'", "config.py:7")`` where a key selects it, else ``("policy=...", None)``."""
    select = suggested.select
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


def policy_rows(advice: Advice, suggested: PolicyAdvice | None) -> list[tuple[str, ...]]:
    """(mark, policy, *COLUMNS) per policy; the mark is ``*`` on the current policy and ``+`` on
    the ``suggested`` one. A candidate JAX rejected has ``-`` in every column (`rejections`)."""
    rows = []
    for p in advice.policies:
        mark = "*" if p.current else ("+" if p is suggested else "")
        if p.error is not None:
            rows.append((mark, policy_label(p), *("-" for _ in COLUMNS)))
            continue
        rows.append(
            (
                mark,
                policy_label(p),
                str(len(p.residuals)),
                *(format_bytes(n) if n else "0" for n in (p.computed_bytes, p.argument_bytes, p.host_bytes)),
                format_flops(p.recompute_flops),
            )
        )
    return rows


def rejections(advice: Advice) -> list[str]:
    """``policy: TypeError: ...`` per candidate JAX rejected: its error's first line, shortened."""
    lines = []
    for p in advice.policies:
        if p.error is not None:
            first = (p.error.strip().splitlines() or [""])[0]
            if len(first) > _ERROR_WIDTH:
                first = first[: _ERROR_WIDTH - 1].rstrip() + "…"
            lines.append(f"{short_policy(p.policy)}: {first}")
    return lines


NO_EFFECT_HEADING = "Names of the current policy that change nothing"


def no_effect_lines(advice: Advice, root: Path | None) -> list[str]:
    """One line per name of the current policy that changes nothing, with the reason."""
    current = advice.current
    return [n.explain(root) for n in current.no_effect] if current is not None else []


def heading(advice: Advice, root: Path | None) -> str:
    """``mlp.py:14 (example mlp.py:example · jax 0.10.2, cpu)``"""
    where = f"{relative(advice.path, root)}:{advice.line}"
    facts = [f"example {advice.example}" if advice.example else None]
    if advice.jax_version:
        facts.append(f"jax {advice.jax_version}" + (f", {advice.platform}" if advice.platform else ""))
    extra = " · ".join(f for f in facts if f)
    return f"{where}" + (f" ({extra})" if extra else "")


def format_markdown(advice: Advice, root: Path | None, budget: int | None = None) -> str:
    """The advice as Markdown (the editor's "Compare policies", `--output-format markdown`)."""
    lines = [f"### Remat policies at `{heading(advice, root)}`", ""]
    if not advice.ok:
        lines.append(advice.message)
        return "\n".join(lines) + "\n"
    suggested = advice.suggest(budget) if budget is not None else None
    lines.append("| | policy | " + " | ".join(COLUMNS) + " |")
    lines.append("|---|---|" + "---:|" * len(COLUMNS))
    for mark, policy, *cells in policy_rows(advice, suggested):
        shown = {"*": "current", "+": "suggested"}.get(mark, "")
        lines.append(f"| {shown} | `{policy}` | " + " | ".join(cells) + " |")
    lines += ["", f"*{LEGEND}.*"]
    rejected = rejections(advice)
    if rejected:
        lines += ["", "**Rejected by JAX:**", ""]
        lines += [f"- {line}" for line in rejected]
    no_effect = no_effect_lines(advice, root)
    if no_effect:
        lines += ["", f"**{NO_EFFECT_HEADING}:**", ""]
        lines += [f"- {line}" for line in no_effect]
    current = advice.current
    if current is not None and current.residuals:
        lines += ["", f"**The current policy keeps** ({current.summary()}):", ""]
        lines += [f"- `{r.label}` {residual_line(r, root)[len(r.label) + 1 :]}" for r in current.residuals]
    if budget is not None:
        lines.append("")
        if suggested is None:
            lines.append(f"No policy keeps its computed residuals within {format_bytes(budget)}.")
        else:
            action, where = suggestion(advice, suggested, root)
            detail = f" ({where})" if where else ""
            lines.append(f"**Suggested** for a budget of {format_bytes(budget)}: `{action}`{detail}")
    lines += [
        "",
        "Residuals as JAX records them for the backward pass (not XLA's peak memory); "
        "recompute counts `dot_general`/convolution FLOPs done again in the backward pass.",
    ]
    return "\n".join(lines) + "\n"
