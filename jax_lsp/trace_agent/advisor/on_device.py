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
from . import kept
from .example import short_error
from .peak import step_function

RUNS = 5  # timed runs of each step after a first, untimed one; the median is reported
BUSY = "the TPU is in use by another process"


def run_each(work, jaxpr_of):
    """The answer to a ``run`` request: each of ``work``'s candidates (the `Work` of an advise,
    whose device is open) run on the device; ``jaxpr_of(candidate)`` is its forward jaxpr. A
    candidate's step is the executable its compile kept for this run where there is one
    (``loaded``, `kept`), else compiled here; ``executable_s`` says how long either took.

    The device keeps one high-water mark for the process, never reset, so the steps run in the
    order of their compiled peaks, smallest first: a step that raises the mark reports its own
    peak (``peak_bytes_in_use``), one that does not reports only the mark it stayed under
    (``peak_bytes_at_most``)."""
    device = jax.devices()[0]
    if device.platform == "cpu" and _refused_elsewhere():
        return {"status": "device_busy", "message": BUSY}
    inputs = random_inputs(work.leaves)
    found, ready = {}, []
    for candidate in work.candidates:
        try:
            step = step_function(work.forward, jaxpr_of(candidate), work.leaves, work.positional)
            started = time.perf_counter()
            compiled = _kept(work, candidate, step, inputs)
            loaded = compiled is not None
            if compiled is None:
                compiled = jax.jit(step).lower(*inputs).compile()
            figures = {"executable_s": time.perf_counter() - started, "loaded": loaded}
            ready.append((_planned_peak(compiled), candidate.text, compiled, figures))
        except MemoryError:
            raise
        except Exception as exc:  # JAX rejects the candidate
            found[candidate.text] = {"error": short_error(exc)}
    for _, text, compiled, figures in sorted(ready, key=lambda entry: entry[0]):
        try:
            found[text] = {**_timed(compiled, inputs, device), **figures}
        except MemoryError:
            raise
        except Exception as exc:  # its step does not fit the device
            found[text] = {"error": short_error(exc)}
    return {
        "status": "ok",
        "message": "",
        "platform": device.platform,
        "device": getattr(device, "device_kind", str(device)),
        "runs": [{"policy": c.text, **found[c.text]} for c in work.candidates],
    }


def _kept(work, candidate, step, inputs):
    """The executable the candidate's compile kept for this run (`kept`), loaded; else None."""
    if not work.executables:
        return None
    return kept.load(kept.path_for(work.executables, candidate.text), step, inputs)


def _planned_peak(compiled) -> int:
    try:
        stats = compiled.memory_analysis()
        return int(stats.peak_memory_in_bytes or stats.temp_size_in_bytes)
    except Exception:  # a backend without the analysis: the candidates' own order
        return 0


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


def _timed(compiled, inputs, device):
    """``step_s`` (the median of `RUNS` runs of the compiled step, seconds) and its peak on the
    device: ``peak_bytes_in_use`` where the step raised the device's high-water mark (then the
    mark is its own peak), else ``peak_bytes_at_most`` (the mark it stayed under); neither where
    the device keeps no memory statistics, as the CPU."""
    before = _high_water(device)
    jax.block_until_ready(compiled(*inputs))
    seconds = []
    for _ in range(RUNS):
        begun = time.perf_counter()
        jax.block_until_ready(compiled(*inputs))
        seconds.append(time.perf_counter() - begun)
    after = _high_water(device)
    figures = {"step_s": statistics.median(seconds), "runs": RUNS, "peak_bytes_in_use": None}
    if after is not None and before is not None and after > before:
        figures["peak_bytes_in_use"] = after
    elif after is not None:
        figures["peak_bytes_at_most"] = after
    return figures


def _high_water(device):
    try:
        return (device.memory_stats() or {}).get("peak_bytes_in_use")
    except Exception:
        return None


def _refused_elsewhere():
    """Whether JAX fell back to the CPU because libtpu refused a chip another process holds."""
    try:  # private, feature-detected: JAX's record of the backends that failed to start
        from jax._src import xla_bridge

        errors = dict(getattr(xla_bridge, "_backend_errors", None) or {})
    except Exception:
        return False
    return any(holds_chip_elsewhere(str(error)) for error in errors.values())
