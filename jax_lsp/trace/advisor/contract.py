"""The advice's one wire format (docs/advise.md, "The JSON contract"): `write_advice` writes an
`Advice` as the JSON of `jax-lsp advise --output-format json` and of the editor's commands,
`advice_fields` reads it back into the fields of the advice that wrote it (every field: a property
test holds them to it), and the trace agent's answer is read by the same reader once in the
contract's words (`in_contract_words`). Paths are relative to the project's root where inside it
(`relative`) and absolute again once read (`absolute`). Malformed parts read as empty, never raise.

The contract only grows: a key is added, never renamed or dropped.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jax_lsp.trace.advisor import step_time
from jax_lsp.trace.advisor.compiled import read_compiled, read_exhausted
from jax_lsp.trace.advisor.policy_advice import (
    KINDS,
    REASONS,
    FitCheck,
    NoEffect,
    PolicyAdvice,
    Residual,
    Select,
    Selector,
    Setting,
    groups,
)
from jax_lsp.trace.advisor.runs import read_device_runs, read_step_run
from jax_lsp.trace.advisor.user_call import read_user_call
from jax_lsp.trace.compile_target import CompileTarget, CompileTargetError, parse_target

if TYPE_CHECKING:
    from jax_lsp.core.findings import Edit
    from jax_lsp.trace.advisor.advice import Advice
    from jax_lsp.trace.advisor.write.written import WrittenPolicy


def relative(path: str | None, root: Path | None) -> str | None:
    """``path`` relative to ``root`` when inside it (as the contract shows paths), else as is."""
    if path is None or root is None:
        return path
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def absolute(path: Any, root: Path | None) -> str | None:
    """A contract's ``path`` (`relative`) as the file's own path again."""
    if not isinstance(path, str):
        return None
    if root is None or Path(path).is_absolute():
        return path
    return str(root.resolve() / path)


# -- writing ----------------------------------------------------------------------------------
def residual_json(residual: Residual, root: Path | None) -> dict[str, Any]:
    r = residual
    used_by = None if r.used_by is None else [{"path": relative(p, root), "line": n} for p, n in r.used_by]
    return {
        "shape": list(r.shape),
        "dtype": r.dtype,
        "bytes": r.bytes,
        "memory": r.memory,
        "kind": r.kind,
        "name": r.name,
        "path": relative(r.path, root),
        "line": r.line,
        "iterations": r.iterations,
        "reason": r.reason,
        "description": r.description,
        "used_by": used_by,
    }


def select_json(select: Select | None) -> dict[str, Any] | None:
    return None if select is None else {"key": select.key, "expression": select.expression}


def setting_json(setting: Setting | None, root: Path | None) -> dict[str, Any] | None:
    if setting is None:
        return None
    where = {"path": relative(setting.path, root), "line": setting.line}
    return {**where, "column": setting.column, "end_column": setting.end_column, "text": setting.text}


def _no_effect_json(entry: NoEffect, root: Path | None) -> dict[str, Any]:
    return {
        "name": entry.name,
        "role": entry.role,
        "reason": entry.reason,
        "tagged_outside": [{"path": relative(p, root), "line": n} for p, n in entry.tagged_outside],
        "without": entry.without,
    }


def numbers(policy: PolicyAdvice) -> dict[str, int | None]:
    """A candidate's figures as the contract names them."""
    return {
        "device_bytes": policy.device_bytes,
        "host_bytes": policy.host_bytes,
        "argument_bytes": policy.argument_bytes,
        "computed_bytes": policy.computed_bytes,
        "recompute_flops": policy.recompute_flops,
        "peak_bytes": policy.peak_bytes,
        "peak_fusible_bytes": policy.peak_fusible_bytes,
    }


def policy_json(policy: PolicyAdvice, root: Path | None) -> dict[str, Any]:
    """A candidate's entry (a rejected one's figures are null)."""
    figures = numbers(policy)
    data: dict[str, Any] = {
        "policy": policy.policy,
        "current": policy.current,
        **(figures if policy.error is None else dict.fromkeys(figures)),
        "residuals": [
            {**residual_json(r, root), "group": group}
            for r, group in zip(policy.residuals, groups(policy.residuals))
        ],
        "select": select_json(policy.select),
    }
    if policy.error is not None:
        data["error"] = policy.error
    data["no_effect"] = [_no_effect_json(n, root) for n in policy.no_effect]
    if policy.was_compiled:
        data.update(compile_json(policy))
    if policy.run is not None:
        data["run"] = policy.run.to_json()
    return data


def compile_json(policy: PolicyAdvice) -> dict[str, Any]:
    """The keys --compile adds: ``compiled``, ``estimate_error``, ``compile_s``, and
    ``compile_error`` for a step that did not compile."""
    data: dict[str, Any] = {
        "compiled": policy.compiled.to_json() if policy.compiled is not None else None,
        "estimate_error": policy.estimate_error,
        "compile_s": policy.compile_s,
    }
    if policy.compile_error is not None:
        data["compile_error"] = policy.compile_error
    if policy.exhausted is not None:
        data["exhausted"] = policy.exhausted.to_json()
    if policy.compile_stopped is not None:
        data["compile_stopped"] = policy.compile_stopped
    return data


def target_json(advice: Advice) -> dict[str, Any] | None:
    """What the steps were compiled for (None: not compiled)."""
    target = advice.target
    if target is None or not advice.compiled:
        return None
    sharding = next((p.compiled.sharding for p in advice.policies if p.compiled is not None), None)
    return {
        "name": target.name,
        "topology": target.topology,
        "chips": target.chips if target.is_tpu else None,
        "memory_bytes": target.memory_bytes,
        "source": target.source,
        "sharding": sharding,
    }


def fit_json(advice: Advice, policy: PolicyAdvice) -> dict[str, Any]:
    """``fits`` and ``over_bytes`` of a policy compiled for a TPU target; {} otherwise."""
    fits = advice.fits(policy)
    return {} if fits is None else {"fits": fits, "over_bytes": advice.over_bytes(policy)}


def _suggested_json(
    advice: Advice, suggested: PolicyAdvice, budget: int, root: Path | None
) -> dict[str, Any]:
    compiled = {"compiled": suggested.compiled.to_json()} if suggested.compiled is not None else {}
    keyed = suggested.select is not None and advice.setting is not None
    return {
        "policy": suggested.policy,
        **numbers(suggested),
        **compiled,
        "budget": budget,
        "select": select_json(suggested.select),
        "setting": setting_json(advice.setting, root) if keyed else None,
    }


def write_advice(advice: Advice, root: Path | None, budget: int | None = None) -> dict[str, Any]:
    """The advice as the contract's JSON, the suggestion for ``budget`` in it; paths relative to
    ``root`` where inside it."""
    a = advice
    suggested = a.suggest(budget) if budget is not None and a.ok else None
    call = a.user_call
    data: dict[str, Any] = {
        "status": a.status,
        "message": a.message,
        "target": {"path": relative(a.path, root), "line": a.line},
        "jax": a.jax_version,
        "platform": a.platform,
        "compile_target": target_json(a),
        "policies": [
            {
                **policy_json(p, root),
                "same_as": [o.policy for o in a.same_as(p)],
                **fit_json(a, p),
                **step_time.estimate_json(a.target, p),
            }
            for p in a.policies
        ],
        "suggested": None,
        "notes": list(a.notes),
        "fit_check": {"policies": list(a.fit_check.policies), "seconds": a.fit_check.seconds}
        if a.fit_check is not None
        else None,
        "python": a.python,
        "names": list(a.names),
        "example": {"spec": a.example} if a.example is not None else None,
        "duration_s": a.duration_s,
        "timings": dict(a.timings),
        "selector": {
            "expression": a.selector.expression,
            "current": a.selector.current,
            "keys": list(a.selector.keys),
        }
        if a.selector is not None
        else None,
        "setting": setting_json(a.setting, root),
        "setting_note": a.setting_note,
        "user_call": call.to_json(relative(call.path, root), suggested) if call is not None else None,
    }
    if a.run is not None:
        data["run"] = a.run.to_json()
    if suggested is not None and budget is not None:
        data["suggested"] = _suggested_json(a, suggested, budget, root)
    if not a.ok:
        where = {"path": relative(a.error_path, root), "line": a.error_line}
        data["error"] = {"status": a.status, "message": a.message, **where}
    return data


# -- reading ----------------------------------------------------------------------------------
def written_policy_json(written: WrittenPolicy, root: Path | None) -> dict[str, Any]:
    """The contract's ``written_policy``."""
    entry = written.entry
    return {
        "expression": written.expression,
        "edits": [edit_json(e, root) for e in written.edits],
        "compiled": entry.compiled.to_json() if entry is not None and entry.compiled is not None else None,
        "step_estimate_s": written.step_estimate_s,
        "budget": written.budget,
        "verdict": written.verdict,
        "message": written.message,
        "figures": numbers(entry) if entry is not None else None,
        "tags": [
            {"name": t.name, "path": relative(t.path, root), "line": t.place.line if t.place else None}
            for t in written.tags
        ],
        "site_edit_note": written.site_edit_note,
        "named": written.named.policy if written.named is not None else None,
        "missed_by_bytes": written.missed_by,
        "smallest": written.smallest,
        "search": written.cost.to_json() if written.cost is not None else None,
    }


def edit_json(edit: Edit, root: Path | None) -> dict[str, Any]:
    """An edit as the contract writes one: 1-based lines, 0-based code-point columns."""
    start, end = edit.span.start, edit.span.end
    return {
        "path": relative(edit.path, root),
        "start": {"line": start.line + 1, "column": start.column},
        "end": {"line": end.line + 1, "column": end.column},
        "new_text": edit.new_text,
    }


def in_contract_words(answer: dict[str, Any]) -> dict[str, Any]:
    """The agent's answer as the contract words it: the agent's protocol (a trace's too) names
    JAX's release ``jax_version`` and a candidate's error ``{message, path, line}``."""
    policies = [
        {**raw, "error": _table(raw, "error").get("message")} if isinstance(raw, dict) else raw
        for raw in answer.get("policies") or ()
    ]
    return {**answer, "jax": answer.get("jax_version"), "policies": policies}


def advice_fields(data: dict[str, Any], path: str, line: int, root: Path | None) -> dict[str, Any]:
    """`write_advice`'s JSON (its paths relative to ``root``) as the fields of an `Advice`;
    ``path`` and ``line`` where it names no site."""
    error, target, example = (_table(data, key) for key in ("error", "target", "example"))
    setting, compile_target = _table(data, "setting"), _table(data, "compile_target")
    fit_check = _table(data, "fit_check")
    call = read_user_call(data.get("user_call"))
    return {
        "status": str(data.get("status") or "error"),
        "message": str(data.get("message") or ""),
        "path": absolute(target.get("path"), root) or path,
        "line": _int(target.get("line")) or line,
        "jax_version": data.get("jax"),
        "platform": data.get("platform"),
        "python": data.get("python"),
        "policies": tuple(_policy(raw, root) for raw in data.get("policies") or () if isinstance(raw, dict)),
        "names": tuple(str(n) for n in data.get("names") or ()),
        "example": example.get("spec"),
        "error_path": absolute(error.get("path"), root) or (None if data.get("status") == "ok" else path),
        "error_line": _int(error.get("line")),
        "duration_s": data.get("duration_s"),
        "timings": tuple(_table(data, "timings").items()),
        "selector": _selector(_table(data, "selector")),
        "setting": _setting(setting, root) if setting else None,
        "setting_note": data.get("setting_note") if isinstance(data.get("setting_note"), str) else None,
        "notes": tuple(n for n in data.get("notes") or () if isinstance(n, str)),
        "target": _compile_target(compile_target) if compile_target else None,
        "run": read_device_runs(data.get("run")),
        "fit_check": FitCheck(
            tuple(map(str, fit_check.get("policies") or ())), float(fit_check.get("seconds") or 0)
        )
        if fit_check
        else None,
        "user_call": replace(call, path=absolute(call.path, root) or call.path) if call is not None else None,
    }


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _residual(raw: dict[str, Any], root: Path | None) -> Residual:
    return Residual(
        shape=tuple(int(d) for d in raw.get("shape") or ()),
        dtype=str(raw.get("dtype") or ""),
        bytes=_int(raw.get("bytes")) or 0,
        memory="host" if raw.get("memory") == "host" else "device",
        kind=raw["kind"] if raw.get("kind") in KINDS else "computed",
        name=_text(raw.get("name")),
        path=absolute(raw.get("path"), root),
        line=_int(raw.get("line")),
        iterations=_int(raw.get("iterations")),
        description=str(raw.get("description") or ""),
        reason=raw["reason"] if raw.get("reason") in REASONS else None,
        used_by=_lines(raw.get("used_by"), root),
    )


def _lines(raw: Any, root: Path | None) -> tuple[tuple[str, int], ...] | None:
    if not isinstance(raw, list):
        return None
    return tuple(
        (absolute(item["path"], root) or "", item["line"])
        for item in raw
        if isinstance(item, dict) and isinstance(item.get("path"), str) and _int(item.get("line")) is not None
    )


def _key(value: Any) -> str | int | None:
    return value if isinstance(value, str) or _int(value) is not None else None


def _selector(raw: dict[str, Any]) -> Selector | None:
    expression = raw.get("expression")
    if not isinstance(expression, str) or not expression:
        return None
    keys = tuple(k for k in (_key(k) for k in raw.get("keys") or ()) if k is not None)
    return Selector(expression, _key(raw.get("current")), keys)


def _select(raw: Any) -> Select | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("expression"), str):
        return None
    key = _key(raw.get("key"))
    return Select(key, raw["expression"]) if key is not None else None


def _policy(raw: dict[str, Any], root: Path | None) -> PolicyAdvice:
    return PolicyAdvice(
        policy=str(raw.get("policy") or ""),
        current=bool(raw.get("current")),
        device_bytes=_int(raw.get("device_bytes")) or 0,
        host_bytes=_int(raw.get("host_bytes")) or 0,
        recompute_flops=_int(raw.get("recompute_flops")),
        residuals=tuple(_residual(r, root) for r in raw.get("residuals") or () if isinstance(r, dict)),
        error=_text(raw.get("error")),
        select=_select(raw.get("select")),
        peak_bytes=_int(raw.get("peak_bytes")),
        peak_fusible_bytes=_int(raw.get("peak_fusible_bytes")),
        compiled=read_compiled(raw.get("compiled")),
        compile_s=raw["compile_s"] if isinstance(raw.get("compile_s"), (int, float)) else None,
        compile_error=_text(raw.get("compile_error")),
        exhausted=read_exhausted(raw.get("exhausted")),
        compile_stopped=_text(raw.get("compile_stopped")),
        run=read_step_run(raw.get("run")),
        no_effect=tuple(_no_effect(n, root) for n in raw.get("no_effect") or () if isinstance(n, dict)),
    )


def _no_effect(raw: dict[str, Any], root: Path | None) -> NoEffect:
    places = (p for p in raw.get("tagged_outside") or () if isinstance(p, dict))
    return NoEffect(
        name=str(raw.get("name") or ""),
        role=str(raw.get("role") or ""),
        reason=str(raw.get("reason") or ""),
        tagged_outside=tuple(
            (absolute(p["path"], root) or "", p["line"])
            for p in places
            if isinstance(p.get("path"), str) and _int(p.get("line"))
        ),
        without=_text(raw.get("without")),
    )


def _setting(raw: dict[str, Any], root: Path | None) -> Setting | None:
    where, text = absolute(raw.get("path"), root), raw.get("text")
    line, column, end = (_int(raw.get(key)) for key in ("line", "column", "end_column"))
    if where is None or not isinstance(text, str) or line is None or column is None or end is None:
        return None
    return Setting(where, line, column, end, text)


def _compile_target(raw: dict[str, Any]) -> CompileTarget | None:
    try:
        return parse_target(str(raw.get("name")), str(raw.get("source")))
    except CompileTargetError:
        return None
