"""A candidate's step time predicted for its target, from its compiled program (issue 45).

The compile `advise --compile` does for the target gives, besides its memory, what the program
does (`StepCost`, read by the trace agent from the optimized HLO: `trace_agent/advisor/
step_cost.py`): its matrix-product FLOPs and the bytes each operation moves, every loop counted
as often as it runs, and the bytes it moves between device and host memory. A `Chip` turns that
into seconds: each operation takes the longer of its FLOPs at the chip's matrix rate and its bytes
at the memory's bandwidth (a roofline per operation, summed), plus a fixed cost per operation
and per step; asynchronous copies within the device (the chip's DMA engines) are hidden under that
work; host transfers go at the host link's rate, partly hidden under the device's work.

The constants start from the public figures of each chip and are calibrated against steps
measured on a TPU v5e (benchmarks/records/step_time_v5e.json; docs/accelerators.md, "Step
time"). `Chip.error` is the model's stated error: two predictions closer than that tie.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jax_lsp.trace.advisor import runs

if TYPE_CHECKING:
    from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
    from jax_lsp.trace.compile_target import CompileTarget


@dataclass(frozen=True)
class StepCost:
    """What a compiled step does (the agent's ``cost``), loops counted by their trips."""

    flops: int  # matrix products' FLOPs (float32 ones included)
    f32_flops: int  # of which float32 (or float64) products
    bytes: int  # device memory (HBM) read and written
    on_chip_bytes: int  # the chip's own fast memory read and written (XLA:TPU's memory space 1)
    host_bytes: int  # moved between device and host memory (offloading)
    loop_host_bytes: int  # of which moved in loops' bodies (a transfer each trip)
    operations: int  # operations run (fusions, products, copies, transfers)
    loop_trips: tuple[int | None, ...]  # each loop's trip count; None where not static
    # [FLOPs, float32 FLOPs times passes, bytes, on-chip bytes, operations] of the operations of
    # each arithmetic intensity (the roofline is taken per bucket)
    buckets: tuple[tuple[int, int, int, int, int], ...]
    xla_flops: float | None = None  # cost_analysis() as XLA gives it: each loop's body once
    xla_bytes: float | None = None
    # of `bytes` and `on_chip_bytes`, those of asynchronous copies (a ``copy-start``: the chip's
    # DMA engines, beside the computation); not in `buckets`
    async_bytes: int = 0
    async_on_chip_bytes: int = 0

    @property
    def uncounted_loops(self) -> int:
        """Loops whose trip count the program does not state: their bodies are counted once."""
        return sum(1 for trips in self.loop_trips if trips is None)

    def to_json(self) -> dict[str, Any]:
        return {
            "flops": self.flops,
            "f32_flops": self.f32_flops,
            "bytes": self.bytes,
            "on_chip_bytes": self.on_chip_bytes,
            "host_bytes": self.host_bytes,
            "loop_host_bytes": self.loop_host_bytes,
            "async_bytes": self.async_bytes,
            "async_on_chip_bytes": self.async_on_chip_bytes,
            "operations": self.operations,
            "loop_trips": list(self.loop_trips),
            "uncounted_loops": self.uncounted_loops,
            "buckets": [list(b) for b in self.buckets],
            "xla": {"flops": self.xla_flops, "bytes_accessed": self.xla_bytes},
        }


def read_step_cost(raw: Any) -> StepCost | None:
    """The agent's (or the contract's) ``cost``; None where it is missing or malformed."""
    if not isinstance(raw, dict):
        return None
    keys = ("flops", "f32_flops", "bytes", "on_chip_bytes", "host_bytes", "operations")
    later = ("loop_host_bytes", "async_bytes", "async_on_chip_bytes")  # an older answer's: none
    numbers = [raw.get(k) for k in keys] + [raw.get(k, 0) for k in later]
    trips, buckets = raw.get("loop_trips"), raw.get("buckets")
    if not all(_is_int(n) for n in numbers) or not isinstance(trips, list) or not isinstance(buckets, list):
        return None
    if not all(t is None or _is_int(t) for t in trips):
        return None
    if not all(isinstance(b, list) and len(b) == 5 and all(_is_int(v) for v in b) for b in buckets):
        return None
    xla: dict[str, Any] = raw["xla"] if isinstance(raw.get("xla"), dict) else {}
    flops, f32_flops, moved, on_chip, host, operations, looped, copied, copied_on_chip = (
        int(n)  # type: ignore[arg-type]
        for n in numbers
    )
    return StepCost(
        flops,
        f32_flops,
        moved,
        on_chip,
        host,
        looped,
        operations,
        tuple(trips),
        tuple((b[0], b[1], b[2], b[3], b[4]) for b in buckets),
        _number(xla.get("flops")),
        _number(xla.get("bytes_accessed")),
        copied,
        copied_on_chip,
    )


@dataclass(frozen=True)
class Chip:
    """The rates a step is predicted with: one chip of a generation, or the local CPU."""

    name: str  # "v5e", "cpu"
    matmul_flop_s: float  # matrix products in bfloat16 (and narrower), FLOP/s achieved
    f32_flop_s: float  # float32 products, per pass of the matrix unit
    hbm_bytes_s: float  # device memory bandwidth achieved
    on_chip_bytes_s: float  # the chip's own fast memory
    host_bytes_s: float  # the host link, each way
    operation_s: float  # fixed cost of each operation run (launch, synchronisation)
    step_s: float  # fixed cost of each step
    # how much of the device's work hides the host transfers made outside loops (1: up to all
    # of it); a transfer in a loop's body waits between the trip's operations and is not hidden
    host_overlap: float
    error: float  # the model's stated error (a fraction): predictions closer than this tie
    basis: str  # where the constants come from, in words


@dataclass(frozen=True)
class StepEstimate:
    """A predicted step: its seconds and what they came from."""

    seconds: float
    chip: str  # the Chip's name: "v5e", "cpu"
    bound: str  # what most of the time is spent on: "compute", "memory", "host" or "overhead"
    compute_s: float  # the matrix products at the chip's rate
    memory_s: float  # the bytes at the memory's bandwidth
    host_s: float  # the host transfers at the host link's rate (before any overlap)
    overhead_s: float  # the fixed costs of the operations and the step
    error: float
    cost: StepCost

    def to_json(self) -> dict[str, Any]:
        cost = self.cost
        return {
            "seconds": self.seconds,
            "chip": self.chip,
            "bound": self.bound,
            "compute_s": self.compute_s,
            "memory_s": self.memory_s,
            "host_s": self.host_s,
            "overhead_s": self.overhead_s,
            "error": self.error,
            "flops": cost.flops,
            "bytes": cost.bytes,
            "host_bytes": cost.host_bytes,
            "operations": cost.operations,
            "loop_trips": list(cost.loop_trips),
            "uncounted_loops": cost.uncounted_loops,
        }


def _v5e_based(name: str, flop_s: float, hbm_bytes_s: float, host_bytes_s: float) -> Chip:
    """A generation's chip: its public peak figures, scaled by what the calibration on the v5e
    found achieved (the same fractions of peak: measured only on a v5e)."""
    v5e = CHIPS["v5e"]
    return Chip(
        name,
        flop_s * v5e.matmul_flop_s / V5E_PUBLIC_FLOP_S,
        flop_s * v5e.f32_flop_s / V5E_PUBLIC_FLOP_S,
        hbm_bytes_s * v5e.hbm_bytes_s / V5E_PUBLIC_HBM_BYTES_S,
        hbm_bytes_s * v5e.on_chip_bytes_s / V5E_PUBLIC_HBM_BYTES_S,
        host_bytes_s * v5e.host_bytes_s / V5E_PUBLIC_HOST_BYTES_S,
        v5e.operation_s,
        v5e.step_s,
        v5e.host_overlap,
        2 * v5e.error,  # not measured on this generation
        f"public figures ({flop_s / 1e12:.0f} TFLOP/s, {hbm_bytes_s / 1e9:.0f} GB/s, host "
        f"{host_bytes_s / 1e9:.0f} GB/s) at the fractions of peak measured on a TPU v5e",
    )


# Public figures (Cloud TPU documentation, the JAX scaling book).
V5E_PUBLIC_FLOP_S, V5E_PUBLIC_HBM_BYTES_S, V5E_PUBLIC_HOST_BYTES_S = 197e12, 819e9, 16e9
CHIPS: dict[str, Chip] = {
    # Calibrated on 27 steps measured on a TPU v5e (benchmarks/records/step_time_v5e.json,
    # benchmarks/step_time/fit.py): the chip's own matrix rate (167 TFLOP/s measured on an
    # 8192-cube product) and its public HBM bandwidth and host link, within a few percent.
    "v5e": Chip(
        "v5e",
        matmul_flop_s=1.64e14,
        f32_flop_s=1.64e14,  # a float32 product at default precision: one bfloat16 pass
        hbm_bytes_s=7.20e11,
        on_chip_bytes_s=2.50e12,
        host_bytes_s=1.71e10,
        operation_s=0.0,  # the fit found none beyond each operation's roofline
        step_s=5.5e-4,  # a dispatched step's round trip, measured on the lent chip
        host_overlap=1.0,
        error=0.10,
        basis="calibrated on 27 steps of 5 models measured on a TPU v5e (26 within 10%, all "
        "within 20%): 164 TFLOP/s, 720 GB/s HBM, 17.1 GB/s host link",
    ),
    # The local CPU: nominal figures of a few cores, for the order of magnitude only.
    "cpu": Chip(
        "cpu",
        matmul_flop_s=100e9,
        f32_flop_s=100e9,
        hbm_bytes_s=20e9,
        on_chip_bytes_s=20e9,
        host_bytes_s=20e9,
        operation_s=2e-6,
        step_s=20e-6,
        host_overlap=0.0,
        error=0.5,
        basis="nominal figures of a few CPU cores (100 GFLOP/s, 20 GB/s), not measured here",
    ),
}
CHIPS["v5p"] = _v5e_based("v5p", 459e12, 2765e9, 16e9)
CHIPS["v6e"] = _v5e_based("v6e", 918e12, 1640e9, 32e9)
CHIPS["v4"] = _v5e_based("v4", 275e12, 1228e9, 16e9)


def chip_for(generation: str | None) -> Chip:
    """The chip of a TPU generation's name ("v5e"), the CPU's for None."""
    return CHIPS.get(generation or "cpu", CHIPS["cpu"])


def estimate(cost: StepCost | None, generation: str | None) -> StepEstimate | None:
    """The step ``cost`` (a compiled candidate's) predicted on one chip of ``generation``
    (`CompileTarget.generation.name`: "v5e", ...; None: the local CPU); None without a cost."""
    if cost is None:
        return None
    chip = chip_for(generation)
    device = compute = memory = 0.0
    for flops, f32_passes, hbm, on_chip, _ in cost.buckets:
        compute_part = flops / chip.matmul_flop_s + f32_passes / chip.f32_flop_s
        memory_part = hbm / chip.hbm_bytes_s + on_chip / chip.on_chip_bytes_s
        device += max(compute_part, memory_part)
        compute += compute_part
        memory += memory_part
    # asynchronous copies run beside the computation: only what outlasts it adds
    copies = cost.async_bytes / chip.hbm_bytes_s + cost.async_on_chip_bytes / chip.on_chip_bytes_s
    device += max(0.0, copies - device)
    overhead = cost.operations * chip.operation_s + chip.step_s
    host = cost.host_bytes / chip.host_bytes_s
    outside = (cost.host_bytes - cost.loop_host_bytes) / chip.host_bytes_s
    hidden = chip.host_overlap * min(outside, device)
    seconds = device + overhead + host - hidden
    parts = {"compute": compute, "memory": memory, "host": host - hidden, "overhead": overhead}
    bound = max(parts, key=lambda key: parts[key])
    return StepEstimate(seconds, chip.name, bound, compute, memory, host, overhead, chip.error, cost)


def tie(a: float, b: float, error: float) -> bool:
    """Whether two predicted steps are within the model's stated error of each other."""
    return abs(a - b) <= error * min(a, b)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def generation_of(target: CompileTarget | None) -> str | None:
    """The generation a target's chips are ("v5e"); None for the CPU or no target."""
    generation = target.generation if target is not None else None
    return generation.name if generation is not None else None


def policy_estimate(target: CompileTarget | None, policy: PolicyAdvice) -> StepEstimate | None:
    """A candidate's step predicted for ``target`` (the CPU's where it is None or ``cpu``) from
    its compiled program; None where it was not compiled (or JAX rejected it)."""
    compiled = policy.compiled
    if compiled is None or policy.error is not None:
        return None
    return estimate(compiled.cost, generation_of(target))


def estimate_json(target: CompileTarget | None, policy: PolicyAdvice) -> dict[str, Any]:
    """The keys a compiled candidate's entry gains: ``step_estimate_s`` (None where there is no
    prediction) and ``step_estimate`` (what it came from); {} where it was not compiled."""
    if not policy.was_compiled:
        return {}
    found = policy_estimate(target, policy)
    return {
        "step_estimate_s": found.seconds if found is not None else None,
        "step_estimate": found.to_json() if found is not None else None,
    }


def ranked_seconds(target: CompileTarget | None, policy: PolicyAdvice) -> float | None:
    """The step time a candidate is ranked by: measured where its step ran (``--run``), else
    predicted; None where neither is known."""
    measured = runs.measured_step(policy.run)
    if measured is not None:
        return measured
    found = policy_estimate(target, policy)
    return found.seconds if found is not None else None
