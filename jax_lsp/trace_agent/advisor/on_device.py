"""``advise --run``: each candidate's step run on the local device, in a child of the agent the
host started with the user's own environment (the only one that may open the accelerator).

The child opens the device once (JAX's backend, for every candidate), runs each candidate's
compiled step on random inputs of the example's shapes, and gives the device back when it
exits. Where another process holds the TPU, JAX starts on the CPU instead and records libtpu's
refusal: the answer is then ``device_busy``, and nothing is run."""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp

from ..devices import holds_chip_elsewhere
from .example import short_error
from .peak import step_function

RUNS = 5  # timed runs of each step after a first, untimed one; the median is reported
BUSY = "the TPU is in use by another process"


def run_each(work, jaxpr_of):
    """The answer to a ``run`` request: each of ``work``'s candidates (the `Work` of an advise,
    whose device is open) run on the device; ``jaxpr_of(candidate)`` is its forward jaxpr."""
    device = jax.devices()[0]
    if device.platform == "cpu" and _refused_elsewhere():
        return {"status": "device_busy", "message": BUSY}
    inputs = random_inputs(work.leaves)
    runs = []
    for candidate in work.candidates:
        try:
            step = step_function(work.forward, jaxpr_of(candidate), work.leaves, work.positional)
            figures = _timed(step, inputs, device)
        except MemoryError:
            raise
        except Exception as exc:  # JAX rejects the candidate, or its step does not fit the device
            figures = {"error": short_error(exc)}
        runs.append({"policy": candidate.text, **figures})
    return {
        "status": "ok",
        "message": "",
        "platform": device.platform,
        "device": getattr(device, "device_kind", str(device)),
        "runs": runs,
    }


def random_inputs(leaves):
    """Arrays for the example's ``leaves``: a concrete one as it is, else random normal floats,
    random keys, or zeros (integers and booleans: indices and masks that zeros keep valid)."""
    key = jax.random.key(0)
    arrays = []
    for index, leaf in enumerate(leaves):
        if isinstance(leaf, jax.Array):
            arrays.append(leaf)
            continue
        shape, dtype = tuple(leaf.shape), leaf.dtype
        leaf_key = jax.random.fold_in(key, index)
        if jnp.issubdtype(dtype, jax.dtypes.prng_key):
            arrays.append(jax.random.split(leaf_key, shape) if shape else leaf_key)
        elif jnp.issubdtype(dtype, jnp.inexact):
            arrays.append(jax.random.normal(leaf_key, shape, dtype))
        else:
            arrays.append(jnp.zeros(shape, dtype))
    return arrays


def _timed(step, inputs, device):
    """``step_s`` (the median of `RUNS` runs of the compiled step, seconds), ``compile_s`` and
    ``peak_bytes_in_use`` (the device's high-water mark so far; None where the device keeps no
    memory statistics, as the CPU)."""
    started = time.perf_counter()
    compiled = jax.jit(step).lower(*inputs).compile()
    compile_s = time.perf_counter() - started
    jax.block_until_ready(compiled(*inputs))
    seconds = []
    for _ in range(RUNS):
        begun = time.perf_counter()
        jax.block_until_ready(compiled(*inputs))
        seconds.append(time.perf_counter() - begun)
    try:
        stats = device.memory_stats() or {}
    except Exception:
        stats = {}
    return {
        "step_s": statistics.median(seconds),
        "runs": RUNS,
        "compile_s": compile_s,
        "peak_bytes_in_use": stats.get("peak_bytes_in_use"),
    }


def _refused_elsewhere():
    """Whether JAX fell back to the CPU because libtpu refused a chip another process holds."""
    try:  # private, feature-detected: JAX's record of the backends that failed to start
        from jax._src import xla_bridge

        errors = dict(getattr(xla_bridge, "_backend_errors", None) or {})
    except Exception:
        return False
    return any(holds_chip_elsewhere(str(error)) for error in errors.values())
