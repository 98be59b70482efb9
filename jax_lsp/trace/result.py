"""What a trace returns: the agent's JSON answer as typed values.

Lines here are 1-based, as Python reports them; ``mapping`` turns them into core spans.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from jax_lsp.core.findings import StrEnum


class TraceStatus(StrEnum):
    """How a trace ended; the values are the agent's (stdlib-only, it cannot import this)."""

    OK = "ok"
    JAX_ERROR = "jax_error"  # JAX or the policy raised under grad
    POLICY_ERROR = "policy_error"  # evaluating the policy expression raised
    NOT_FOUND = "not_found"
    IMPORT_ERROR = "import_error"
    NO_JAX = "no_jax"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    DEVICE_BUSY = "device_busy"  # the code asked for a chip another process holds
    CRASHED = "crashed"
    CANCELLED = "cancelled"
    ERROR = "error"
    # The policy is made inside a function as the user's code runs (`self.config.remat_policy`):
    # the trace cannot evaluate it alone; nothing is wrong, the advisor runs it through an example
    NEEDS_RUN = "needs_run"
    # The host's own, never the agent's: a checkpoint that passes no policy (JAX's default), so
    # nothing to trace (`trace.locations.no_policy_result`)
    NO_POLICY = "no_policy"

    @classmethod
    def parse(cls, value: object) -> TraceStatus:
        """The agent's status; one this side does not know is an error."""
        try:
            return cls(value)
        except ValueError:
            return cls.ERROR


FAILED_UNDER_JAX = (TraceStatus.JAX_ERROR, TraceStatus.POLICY_ERROR)
# The trace could not run at all, rather than something about the policy.
NOT_RUN = (
    TraceStatus.NO_JAX,
    TraceStatus.ERROR,
    TraceStatus.IMPORT_ERROR,
    TraceStatus.NOT_FOUND,
    TraceStatus.TIMEOUT,
    TraceStatus.MEMORY,
    TraceStatus.DEVICE_BUSY,
    TraceStatus.CRASHED,
)


@dataclass(frozen=True)
class Decision:
    primitive: str
    decision: str  # "saved" | "recomputed" | "offloaded" | "invalid"
    value: str  # what the policy returned, as Python shows it
    count: int
    modes: tuple[str, ...]
    path: str | None = None
    line: int | None = None  # the `return` that produced it; None inside JAX's own policies
    tag: str | None = None  # the checkpoint_name of a `name` primitive
    dst: str | None = None  # offloads: the destination memory kind...
    dst_space: str | None = None  # ...and the memory JAX maps it to ("host" or "device"; None: JAX maps none)

    @property
    def label(self) -> str:
        return f"name:{self.tag}" if self.tag is not None else self.primitive


@dataclass(frozen=True)
class TraceError:
    type: str
    text: str
    path: str | None
    line: int | None
    mode: str | None = None


@dataclass(frozen=True)
class Rejection:
    """A `return` whose value JAX rejects, with the message JAX gives for it."""

    path: str
    line: int
    value: str
    text: str


@dataclass(frozen=True)
class SilentMistake:
    kind: str  # "string_compare" | "device_offload" | "falsy_policy"
    message: str
    path: str
    line: int
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class Residuals:
    count: int
    bytes: int
    host_bytes: int | None  # None: this JAX does not say which memory a residual is in
    items: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PolicyLocation:
    path: str
    line: int
    end_line: int
    kind: str  # "def" | "lambda" | "site" | "assignment"
    text: str


@dataclass(frozen=True)
class TraceResult:
    status: TraceStatus
    message: str
    python: str | None = None
    python_version: str | None = None
    jax_version: str | None = None
    platform: str | None = None
    device: str | None = None
    policy: PolicyLocation | None = None
    decisions: tuple[Decision, ...] = ()
    error: TraceError | None = None
    rejected: tuple[Rejection, ...] = ()  # every rejected `return` the probe reached
    silent: tuple[SilentMistake, ...] = ()
    residuals: Residuals | None = None
    names: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    skipped: tuple[tuple[int, str], ...] = ()
    duration_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.status is TraceStatus.OK

    @property
    def environment(self) -> str:
        """``jax 0.10.2, cpu`` as far as known."""
        parts = [f"jax {self.jax_version}" if self.jax_version else None, self.platform]
        return ", ".join(p for p in parts if p)

    @classmethod
    def failure(cls, status: TraceStatus, message: str, **known: Any) -> TraceResult:
        return cls(status=status, message=message, **known)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TraceResult:
        """Build from the agent's answer; missing or malformed parts become empty, never raise."""

        def pick(kind, raw):
            if not isinstance(raw, dict):
                return None
            names = {f.name for f in dataclasses.fields(kind)}
            try:
                return kind(**{k: v for k, v in raw.items() if k in names})
            except TypeError:
                return None

        decisions = []
        for raw in data.get("decisions") or ():
            if isinstance(raw, dict):
                details = raw.get("details") or {}
                decision = pick(
                    Decision,
                    {
                        **raw,
                        "modes": tuple(raw.get("modes") or ()),
                        "dst": details.get("dst"),
                        "dst_space": details.get("dst_space"),
                    },
                )
                if decision is not None:
                    decisions.append(decision)
        residuals = data.get("residuals")
        if isinstance(residuals, dict):
            residuals = pick(
                Residuals, {**residuals, "items": tuple(tuple(item) for item in residuals.get("items") or ())}
            )
        return cls(
            status=TraceStatus.parse(data.get("status") or "error"),
            message=str(data.get("message") or ""),
            python=data.get("python"),
            python_version=data.get("python_version"),
            jax_version=data.get("jax_version"),
            platform=data.get("platform"),
            device=data.get("device"),
            policy=pick(PolicyLocation, data.get("policy")),
            decisions=tuple(decisions),
            error=pick(TraceError, data.get("error")),
            rejected=tuple(r for r in (pick(Rejection, raw) for raw in data.get("rejected") or ()) if r),
            silent=tuple(s for s in (pick(SilentMistake, raw) for raw in data.get("silent") or ()) if s),
            residuals=residuals if isinstance(residuals, Residuals) else None,
            names=tuple(data.get("names") or ()),
            modes=tuple(data.get("modes") or ()),
            skipped=tuple(tuple(s) for s in data.get("skipped") or ()),
            duration_s=data.get("duration_s"),
        )

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "status": self.status.value}
