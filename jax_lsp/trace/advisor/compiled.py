"""What compiling a candidate's step said (`advise --compile`): XLA's figures (`Compiled`), or
that the step needs more than the target's memory (`Exhausted`), and whether it fits a chip."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jax_lsp.trace.advisor.step_time import StepCost, read_step_cost

# The fields of a candidate's entry (`advice.PolicyAdvice`) that its compile fills: the compile
# step and the budget's fit check copy these from the compile's answer. A new figure of the
# compile is one more field here.
COMPILE_FIELDS = ("compiled", "compile_s", "compile_error", "exhausted", "compile_stopped")


@dataclass(frozen=True)
class Compiled:
    """``memory_analysis()`` of the candidate's ``jit(grad)``, compiled for the target."""

    temp_bytes: int
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    # XLA's peak_memory_in_bytes: everything the step holds at once on a TPU (arguments,
    # outputs, temporaries); on the CPU only the arguments and outputs. None from an older JAX.
    peak_bytes: int | None = None
    host_temp_bytes: int | None = None  # what offloading keeps in the host's memory
    sharding: str | None = None  # a TPU target's: "replicated", or "example" (the example's own)
    cost: StepCost | None = None  # what the program does, loops counted (`step_time.py`)

    @property
    def device_peak_bytes(self) -> int | None:
        """What the step holds at once in the chip's HBM: XLA's peak less the host temporaries,
        which XLA:TPU's peak_memory_in_bytes counts too (an offloading stack compiled for v5e-1:
        peak 17.5 GiB, host temporaries 16 GiB, arguments and outputs 1.5 GiB; XLA compiles it
        for the 15.75 GiB chip, and refuses a step whose device memory is over it).
        None from an older JAX."""
        if self.peak_bytes is None:
            return None
        return max(self.peak_bytes - (self.host_temp_bytes or 0), 0)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "temp_bytes": self.temp_bytes,
            "argument_bytes": self.argument_bytes,
            "output_bytes": self.output_bytes,
            "alias_bytes": self.alias_bytes,
            "peak_bytes": self.peak_bytes,
            "host_temp_bytes": self.host_temp_bytes,
            "device_peak_bytes": self.device_peak_bytes,
        }
        if self.sharding is not None:
            data["sharding"] = self.sharding
        if self.cost is not None:
            data["cost"] = self.cost.to_json()
        return data


@dataclass(frozen=True)
class Exhausted:
    """A step XLA refused to compile for being larger than the chip's memory
    (``RESOURCE_EXHAUSTED``): the answer "does not fit", not an error."""

    required_bytes: int  # what XLA said the step needs (its temporaries, in its words)
    available_bytes: int  # the chip's memory, as XLA counts it
    message: str  # XLA's first line

    @property
    def over_bytes(self) -> int:
        return max(self.required_bytes - self.available_bytes, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "required_bytes": self.required_bytes,
            "available_bytes": self.available_bytes,
            "message": self.message,
        }


def read_compiled(raw: Any) -> Compiled | None:
    """The agent's ``compiled``; None where it is missing or malformed."""
    if not isinstance(raw, dict):
        return None
    temp, argument, output, alias = (
        _int(raw.get(key)) for key in ("temp_bytes", "argument_bytes", "output_bytes", "alias_bytes")
    )
    if temp is None or argument is None or output is None or alias is None:
        return None
    sharding = raw.get("sharding")
    return Compiled(
        temp,
        argument,
        output,
        alias,
        _int(raw.get("peak_bytes")),
        _int(raw.get("host_temp_bytes")),
        sharding if sharding in ("replicated", "example") else None,
        read_step_cost(raw.get("cost")),
    )


def read_exhausted(raw: Any) -> Exhausted | None:
    """The agent's ``exhausted``; None where it is missing or malformed."""
    if not isinstance(raw, dict):
        return None
    required, available = _int(raw.get("required_bytes")), _int(raw.get("available_bytes"))
    if required is None or available is None:
        return None
    return Exhausted(required, available, str(raw.get("message") or ""))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
