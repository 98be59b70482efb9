"""Where `advise --run` ran each candidate's step on the local device, and what it measured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# A measured step time breaks the suggestion's ranking only where it is this many times the
# fastest fitting candidate's and at least CLEAR_MARGIN_S longer (docs/advise.md, "Measured on
# the device"): below that, a median of a few runs on a shared machine is noise.
CLEARLY_SLOWER = 1.5
CLEAR_MARGIN_S = 0.001


@dataclass(frozen=True)
class StepRun:
    """A candidate's step run on the local device (``advise --run``), or why it did not run."""

    step_s: float | None  # the median of `runs` runs of the compiled step
    runs: int | None
    peak_bytes_in_use: int | None  # its own peak on the device, where it raised the high-water mark
    error: str | None = None
    peak_bytes_at_most: int | None = None  # else the device's high-water mark it stayed under
    # The seconds the run took to have the step's executable: compiled there, or (``loaded``)
    # the one the candidate's compile kept for the run, loaded.
    executable_s: float | None = None
    loaded: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "step_s": self.step_s,
            "runs": self.runs,
            "peak_bytes_in_use": self.peak_bytes_in_use,
            "executable_s": self.executable_s,
            "loaded": self.loaded,
        }
        if self.peak_bytes_at_most is not None:
            data["peak_bytes_at_most"] = self.peak_bytes_at_most
        return {**data, "error": self.error} if self.error is not None else data


@dataclass(frozen=True)
class DeviceRuns:
    """Where ``advise --run`` ran the steps: the platform and device, or a note saying why they
    did not run on an accelerator (none here, or another process holds it)."""

    platform: str | None
    device: str | None
    note: str | None

    def to_json(self) -> dict[str, Any]:
        return {"platform": self.platform, "device": self.device, "note": self.note}


def measured_step(run: StepRun | None) -> float | None:
    """The step's measured median time; None where it did not run."""
    return run.step_s if run is not None and run.error is None else None


def fastest_step(runs: Iterable[StepRun | None]) -> float | None:
    return min((s for s in map(measured_step, runs) if s is not None), default=None)


def clearly_slower(run: StepRun | None, fastest_s: float | None) -> bool:
    """Whether ``run``'s step is clearly slower than a step of ``fastest_s`` (`CLEARLY_SLOWER`)."""
    step = measured_step(run)
    if step is None or fastest_s is None:
        return False
    return step >= CLEARLY_SLOWER * fastest_s and step - fastest_s >= CLEAR_MARGIN_S


def own_peak(run: StepRun | None) -> int | None:
    """The step's own measured peak in use: where it raised the device's high-water mark (the
    agent runs the steps smallest compiled peak first); None where it did not, failed, did not
    run, or the device keeps no statistics (the CPU)."""
    return run.peak_bytes_in_use if run is not None and run.error is None else None


def peak_in_use_text(run: StepRun | None) -> str:
    """``106 MiB`` (its own peak), ``≤ 106 MiB`` (the mark it stayed under), or ``?``."""
    from jax_lsp.trace.advisor.sizes import format_bytes

    own = own_peak(run)
    if own is not None:
        return format_bytes(own)
    mark = run.peak_bytes_at_most if run is not None and run.error is None else None
    return "?" if mark is None else f"≤ {format_bytes(mark)}"


def step_text(run: StepRun | None) -> str:
    """``1.02 ms``; ``-`` where it did not run, ``failed`` where it failed."""
    seconds = measured_step(run)
    if seconds is None:
        return "-" if run is None else "failed"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"


def read_step_run(raw: Any) -> StepRun | None:
    if not isinstance(raw, dict):
        return None
    return StepRun(
        step_s=_seconds(raw.get("step_s")),
        runs=_int(raw.get("runs")),
        peak_bytes_in_use=_int(raw.get("peak_bytes_in_use")),
        error=_text(raw.get("error")),
        peak_bytes_at_most=_int(raw.get("peak_bytes_at_most")),
        executable_s=_seconds(raw.get("executable_s")),
        loaded=raw.get("loaded") is True,
    )


def read_device_runs(raw: Any) -> DeviceRuns | None:
    if not isinstance(raw, dict):
        return None
    return DeviceRuns(
        platform=_text(raw.get("platform")), device=_text(raw.get("device")), note=_text(raw.get("note"))
    )


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
