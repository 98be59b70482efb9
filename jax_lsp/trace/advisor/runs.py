"""Where `advise --run` ran each candidate's step on the local device, and what it measured."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    peak_bytes_in_use: int | None  # the device's memory_stats() after it: its high-water mark so far
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"step_s": self.step_s, "runs": self.runs, "peak_bytes_in_use": self.peak_bytes_in_use}
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


def own_peaks(runs: Sequence[StepRun | None]) -> list[int | None]:
    """Each run's own peak in use, in the order the candidates ran: the device's high-water mark
    after it where the mark rose during it (the first run's too); None where the mark did not
    rise (its own peak is at most the mark: unknown), after a run that failed, or where the
    device keeps no statistics (the CPU). A candidate that did not run (None) leaves the mark."""
    peaks: list[int | None] = []
    mark: int | None = 0
    for run in runs:
        if run is None:
            peaks.append(None)
            continue
        after = run.peak_bytes_in_use if run.error is None else None
        peaks.append(after if after is not None and mark is not None and after > mark else None)
        mark = after
    return peaks


def read_step_run(raw: Any) -> StepRun | None:
    if not isinstance(raw, dict):
        return None
    seconds = raw.get("step_s")
    return StepRun(
        step_s=float(seconds) if isinstance(seconds, (int, float)) else None,
        runs=_int(raw.get("runs")),
        peak_bytes_in_use=_int(raw.get("peak_bytes_in_use")),
        error=_text(raw.get("error")),
    )


def read_device_runs(raw: Any) -> DeviceRuns | None:
    if not isinstance(raw, dict):
        return None
    return DeviceRuns(
        platform=_text(raw.get("platform")), device=_text(raw.get("device")), note=_text(raw.get("note"))
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
