"""Where `advise --run` ran each candidate's step on the local device, and what it measured."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepRun:
    """A candidate's step run on the local device (``advise --run``), or why it did not run."""

    step_s: float | None  # the median of `runs` runs of the compiled step
    runs: int | None
    peak_bytes_in_use: int | None  # its own peak on the device, where it raised the high-water mark
    error: str | None = None
    peak_bytes_at_most: int | None = None  # else the device's high-water mark it stayed under

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "step_s": self.step_s,
            "runs": self.runs,
            "peak_bytes_in_use": self.peak_bytes_in_use,
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


def read_step_run(raw: Any) -> StepRun | None:
    if not isinstance(raw, dict):
        return None
    seconds = raw.get("step_s")
    return StepRun(
        step_s=float(seconds) if isinstance(seconds, (int, float)) else None,
        runs=_int(raw.get("runs")),
        peak_bytes_in_use=_int(raw.get("peak_bytes_in_use")),
        error=_text(raw.get("error")),
        peak_bytes_at_most=_int(raw.get("peak_bytes_at_most")),
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
