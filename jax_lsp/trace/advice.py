"""The policy advisor, host side: ask the trace agent what each policy keeps at one site.

`advise()` sends an ``advise`` request to the warm trace agent (same subprocess, fork per
request, timeout and memory limit as a trace); the answer becomes an `Advice`, whose
`to_contract()` is the JSON of `jax-lsp advise --output-format json` (docs/advise.md).
Lines are 1-based, as Python numbers them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.result import TraceResult
from jax_lsp.trace.service import TraceJob, TraceService, site_params

NAME_BASED = ("save_only_these_names", "save_and_offload_only_these_names")
EXAMPLE_COMMENT = re.compile(r"#\s*jax-lsp:\s*example\s*=\s*(?P<spec>[^\s#]+)")
_SIZE = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt]i?b|b)?\s*$", re.IGNORECASE)
_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
# Statuses the agent gives besides a trace's (`TraceStatus`): the advice could not be made.
NO_EXAMPLE = "no_example"


def parse_size(text: str) -> int:
    """``24GiB``, ``600000B``, ``1.5 GB``, ``4096`` (bytes) as a number of bytes."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size: write e.g. 24GiB, 512MiB or 600000B")
    unit = (match["unit"] or "b").lower()
    return int(float(match["number"]) * _UNITS[unit])


def format_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{count} B"  # pragma: no cover


def format_flops(count: int | None) -> str:
    if count is None:
        return "?"
    if count == 0:
        return "0"
    value = float(count)
    for unit in ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"):
        if value < 1000 or unit == "PFLOP":
            return f"{value:.3g} {unit}" if unit != "FLOP" else f"{count} FLOP"
        value /= 1000
    return str(count)  # pragma: no cover


_SHORT_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "int32": "i32"}


@dataclass(frozen=True)
class Residual:
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    memory: str  # "device" | "host"
    kind: str  # "argument" | "computed"
    name: str | None  # the checkpoint_name, if any
    path: str | None  # the user's file and line that produced it (None for an argument)
    line: int | None
    iterations: int | None  # stacked by a scan of this many iterations
    description: str  # JAX's own words: "from the argument x", "named 'h'", "output of sin"

    @property
    def label(self) -> str:
        """``bf16[8,2048,4096]``, as JAX prints an aval."""
        dims = ",".join(str(d) for d in self.shape)
        return f"{_SHORT_DTYPES.get(self.dtype, self.dtype)}[{dims}]"

    def to_json(self, root: Path | None) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "bytes": self.bytes,
            "memory": self.memory,
            "kind": self.kind,
            "name": self.name,
            "path": relative(self.path, root),
            "line": self.line,
            "iterations": self.iterations,
        }


@dataclass(frozen=True)
class PolicyAdvice:
    policy: str  # a Python expression, e.g. "jax.checkpoint_policies.dots_saveable"
    current: bool
    device_bytes: int
    host_bytes: int
    recompute_flops: int | None  # None: not countable on this JAX release
    residuals: tuple[Residual, ...]
    error: str | None = None  # JAX or the policy raised under this policy

    @property
    def name_based(self) -> bool:
        return any(f".{name}(" in self.policy or self.policy.startswith(name + "(") for name in NAME_BASED)

    def summary(self) -> str:
        """``saves 3 arrays, 768 MiB · recomputes 4.3 GFLOP``."""
        count = len(self.residuals)
        text = f"saves {count} array{'s' if count != 1 else ''}, {format_bytes(self.device_bytes)}"
        if self.host_bytes:
            text += f" (+{format_bytes(self.host_bytes)} on host)"
        return f"{text} · recomputes {format_flops(self.recompute_flops)}"

    def to_json(self, root: Path | None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "policy": self.policy,
            "current": self.current,
            "device_bytes": self.device_bytes,
            "host_bytes": self.host_bytes,
            "recompute_flops": self.recompute_flops,
            "residuals": [r.to_json(root) for r in self.residuals],
        }
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True)
class Advice:
    status: str  # "ok", or why not: a TraceStatus value, "no_example", "example_error", ...
    message: str
    path: str  # the site's file
    line: int  # the site's line (the `policy=` value's first line once found)
    jax_version: str | None = None
    platform: str | None = None
    python: str | None = None
    policies: tuple[PolicyAdvice, ...] = ()
    names: tuple[str, ...] = ()  # the checkpoint_name tags inside the site's checkpoint
    example: str | None = None
    error_path: str | None = None  # where the failure is anchored (the example's or the user's line)
    error_line: int | None = None
    duration_s: float | None = None
    timings: tuple[tuple[str, Any], ...] = ()  # the agent's: load_s, forward_s, max_rss_mb...

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def current(self) -> PolicyAdvice | None:
        return next((p for p in self.policies if p.current), None)

    def suggest(self, budget: int) -> PolicyAdvice | None:
        """The policy with the least recomputation whose device bytes fit ``budget``: on a tie, a
        name-based one (it also holds under JAX's new remat), then the fewest device bytes."""
        fitting = [p for p in self.policies if p.error is None and p.device_bytes <= budget]
        if not fitting:
            return None
        return min(
            fitting,
            key=lambda p: (
                p.recompute_flops if p.recompute_flops is not None else float("inf"),
                not p.name_based,
                p.device_bytes,
                p.host_bytes,
            ),
        )

    def to_contract(self, root: Path | None, budget: int | None = None) -> dict[str, Any]:
        """The JSON contract of `jax-lsp advise` (docs/advise.md)."""
        suggested = self.suggest(budget) if budget is not None and self.ok else None
        data: dict[str, Any] = {
            "target": {"path": relative(self.path, root), "line": self.line},
            "jax": self.jax_version,
            "platform": self.platform,
            "policies": [p.to_json(root) for p in self.policies],
            "suggested": None,
        }
        if suggested is not None:
            data["suggested"] = {
                "policy": suggested.policy,
                "device_bytes": suggested.device_bytes,
                "host_bytes": suggested.host_bytes,
                "recompute_flops": suggested.recompute_flops,
                "budget": budget,
            }
        if not self.ok:
            data["error"] = {
                "status": self.status,
                "message": self.message,
                "path": relative(self.error_path, root),
                "line": self.error_line,
            }
        return data

    @classmethod
    def failure(cls, status: str, message: str, path: str, line: int, **known: Any) -> Advice:
        return cls(status=status, message=message, path=path, line=line, **known)

    @classmethod
    def from_agent(cls, data: dict[str, Any] | TraceResult, path: str, line: int) -> Advice:
        """Build from the agent's answer; malformed parts become empty, never raise."""
        if isinstance(data, TraceResult):  # the agent died, timed out or could not start
            return cls.failure(
                data.status.value,
                data.message,
                path,
                line,
                jax_version=data.jax_version,
                python=data.python,
                error_path=path,
                error_line=line,
            )
        error, target, example = (_table(data, key) for key in ("error", "target", "example"))
        return cls(
            status=str(data.get("status") or "error"),
            message=str(data.get("message") or ""),
            path=str(target.get("path") or path),
            line=_int(target.get("line")) or line,
            jax_version=data.get("jax_version"),
            platform=data.get("platform"),
            python=data.get("python"),
            policies=tuple(_policy(raw) for raw in data.get("policies") or () if isinstance(raw, dict)),
            names=tuple(str(n) for n in data.get("names") or ()),
            example=example.get("spec"),
            error_path=error.get("path") or (None if data.get("status") == "ok" else path),
            error_line=_int(error.get("line")),
            duration_s=data.get("duration_s"),
            timings=tuple(_table(data, "timings").items()),
        )


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _residual(raw: dict[str, Any]) -> Residual:
    return Residual(
        shape=tuple(int(d) for d in raw.get("shape") or ()),
        dtype=str(raw.get("dtype") or ""),
        bytes=_int(raw.get("bytes")) or 0,
        memory="host" if raw.get("memory") == "host" else "device",
        kind="argument" if raw.get("kind") == "argument" else "computed",
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        path=raw.get("path") if isinstance(raw.get("path"), str) else None,
        line=_int(raw.get("line")),
        iterations=_int(raw.get("iterations")),
        description=str(raw.get("description") or ""),
    )


def _policy(raw: dict[str, Any]) -> PolicyAdvice:
    error = raw.get("error")
    return PolicyAdvice(
        policy=str(raw.get("policy") or ""),
        current=bool(raw.get("current")),
        device_bytes=_int(raw.get("device_bytes")) or 0,
        host_bytes=_int(raw.get("host_bytes")) or 0,
        recompute_flops=_int(raw.get("recompute_flops")),
        residuals=tuple(_residual(r) for r in raw.get("residuals") or () if isinstance(r, dict)),
        error=(error.get("message") if isinstance(error, dict) else None),
    )


def relative(path: str | None, root: Path | None) -> str | None:
    """``path`` relative to ``root`` when inside it (as the contract shows paths), else as is."""
    if path is None or root is None:
        return path
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


# ---------------------------------------------------------------------------------------------
# Which example a site uses


def example_for(path: Path, line: int, examples: dict[str, str], root: Path | None) -> str | None:
    """The example for the site at ``line``: a ``# jax-lsp: example=SPEC`` comment on the line,
    else ``[tool.jax-lsp.examples]`` by ``"file.py:LINE"``, then by ``"file.py"``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    if 1 <= line <= len(lines):
        match = EXAMPLE_COMMENT.search(lines[line - 1])
        if match:
            return match["spec"]
    rel = relative(str(path), root) or str(path)
    for key in (f"{rel}:{line}", rel):
        if key in examples:
            return examples[key]
    return None


# ---------------------------------------------------------------------------------------------
# Asking the agent


def submit_advise(
    service: TraceService,
    path: str | os.PathLike,
    line: int,
    column: int | None = None,
    *,
    example: str | None,
    policies: list[str] | tuple[str, ...] = (),
    root: str | os.PathLike | None = None,
    import_root: str | os.PathLike | None = None,
    interpreter: str | None = None,
    options: TraceOptions | None = None,
) -> TraceJob[Advice]:
    """Start advising the site at 1-based ``line`` of ``path`` (`site_params`); the job's result
    is an `Advice`."""
    site = site_params(path, line, column, root, import_root)
    return service.submit(
        "advise",
        {**site, "example": example, "policies": list(policies)},
        options or TraceOptions(),
        interpreter=interpreter,
        cwd=site["root"],
        answer=lambda answer: Advice.from_agent(answer, site["path"], line),
    )


def advise(service: TraceService, path: str | os.PathLike, line: int, **request: Any) -> Advice:
    """`submit_advise`, waited for."""
    return submit_advise(service, path, line, **request).result()


# ---------------------------------------------------------------------------------------------
# Rendering


def _where(residual: Residual, root: Path | None) -> str:
    if residual.path is None:
        return ""
    return f"{relative(residual.path, root)}:{residual.line}"


def _residual_line(residual: Residual, root: Path | None) -> str:
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


def _rows(advice: Advice, suggested: PolicyAdvice | None) -> list[tuple[str, str, str, str, str, str]]:
    rows = []
    for p in advice.policies:
        mark = "*" if p.current else ("+" if p is suggested else "")
        if p.error is not None:
            rows.append((mark, short_policy(p.policy), "-", "-", "-", f"error: {p.error.splitlines()[0]}"))
            continue
        rows.append(
            (
                mark,
                short_policy(p.policy),
                str(len(p.residuals)),
                format_bytes(p.device_bytes),
                format_bytes(p.host_bytes) if p.host_bytes else "0",
                format_flops(p.recompute_flops),
            )
        )
    return rows


def heading(advice: Advice, root: Path | None) -> str:
    where = f"{relative(advice.path, root)}:{advice.line}"
    facts = [f"example {advice.example}" if advice.example else None]
    if advice.jax_version:
        facts.append(f"jax {advice.jax_version}" + (f", {advice.platform}" if advice.platform else ""))
    extra = " · ".join(f for f in facts if f)
    return f"{where}" + (f" ({extra})" if extra else "")


def format_table(advice: Advice, root: Path | None, budget: int | None = None) -> str:
    """The advice as plain text: one row per policy, then what the current policy keeps."""
    lines = [f"== {heading(advice, root)}"]
    if not advice.ok:
        where = f"{relative(advice.error_path, root)}:{advice.error_line}: " if advice.error_line else ""
        lines.append(f"{where}{advice.message}")
        return "\n".join(lines)
    suggested = advice.suggest(budget) if budget is not None else None
    header = ("", "policy", "saves", "device", "host", "recompute")
    rows = [header, *_rows(advice, suggested)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [row[i].rjust(widths[i]) for i in range(2, len(header))]
        lines.append("  ".join(cells).rstrip())
    lines.append("(* current policy" + (", + suggested" if suggested else "") + ")")
    current = advice.current
    if current is not None and current.residuals:
        lines.append("")
        lines.append(f"The current policy keeps ({current.summary()}):")
        lines += [f"  {_residual_line(r, root)}" for r in current.residuals]
    if budget is not None:
        lines.append("")
        if suggested is None:
            lines.append(f"No policy keeps its device residuals within {format_bytes(budget)}.")
        else:
            lines.append(f"Suggested for a budget of {format_bytes(budget)} ({suggested.summary()}):")
            lines.append(f"  policy={suggested.policy}")
    return "\n".join(lines)


def format_markdown(advice: Advice, root: Path | None, budget: int | None = None) -> str:
    """The advice as Markdown (the editor's "Compare policies", `--output-format markdown`)."""
    lines = [f"### Remat policies at `{heading(advice, root)}`", ""]
    if not advice.ok:
        lines.append(advice.message)
        return "\n".join(lines) + "\n"
    suggested = advice.suggest(budget) if budget is not None else None
    lines.append("| | policy | saves | device | host | recompute |")
    lines.append("|---|---|---:|---:|---:|---:|")
    for mark, policy, count, device, host, flops in _rows(advice, suggested):
        shown = {"*": "current", "+": "suggested"}.get(mark, "")
        lines.append(f"| {shown} | `{policy}` | {count} | {device} | {host} | {flops} |")
    current = advice.current
    if current is not None and current.residuals:
        lines += ["", f"**The current policy keeps** ({current.summary()}):", ""]
        lines += [f"- `{r.label}` {_residual_line(r, root)[len(r.label) + 1 :]}" for r in current.residuals]
    if budget is not None:
        lines.append("")
        if suggested is None:
            lines.append(f"No policy keeps its device residuals within {format_bytes(budget)}.")
        else:
            lines.append(f"**Suggested** for a budget of {format_bytes(budget)}: `policy={suggested.policy}`")
    lines += [
        "",
        "Residuals as JAX records them for the backward pass (not XLA's peak memory); "
        "recompute counts `dot_general`/convolution FLOPs done again in the backward pass.",
    ]
    return "\n".join(lines) + "\n"
