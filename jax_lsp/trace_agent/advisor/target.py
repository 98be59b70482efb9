"""Compiling a candidate's step for its target: the local device, or a TPU slice that need not be
here, from its topology (as MaxText's ``train_compile.py`` and axlearn's ``aot_compilation.py``
do), with every argument as a ``ShapeDtypeStruct`` placed on the slice's chips.

A topology compile loads libtpu but opens no device: the process keeps ``jax_platforms`` at
``cpu`` (no TPU backend starts), skips the metadata server's query (``TPU_SKIP_MDS_QUERY``), and
sets ``ALLOW_MULTIPLE_LIBTPU_LOAD`` so that libtpu loads beside a program holding the chip (the
user's training job) instead of failing on its lock file. A step that needs more than the
chip's memory does not compile (``RESOURCE_EXHAUSTED``): that is the answer "does not fit",
read from XLA's message, not an error.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys

import jax

# What a process must set before libtpu loads to compile for a TPU beside the chip's holder.
TOPOLOGY_ENVIRONMENT = {"TPU_SKIP_MDS_QUERY": "1", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


def libtpu_missing(target):
    """Why a compile for the TPU ``target`` (the request's ``target``) cannot run here, as the
    sentence the table shows; None where libtpu is installed (or the target is not a TPU).
    Asks nothing of libtpu: it is looked for, not loaded."""
    if not target:
        return None
    given = os.environ.get("TPU_LIBRARY_PATH")
    if (given and os.path.isfile(given)) or importlib.util.find_spec("libtpu") is not None:
        return None
    return (
        f"compiling for {target['name']} needs libtpu, which {sys.executable} lacks: install it with "
        "pip install 'jax[tpu]' (Linux x86-64); the figures are the estimate"
    )


def keep_off_devices():
    """Make this process able to compile for a TPU topology and unable to open any accelerator:
    the variables libtpu reads as it loads, and JAX's platforms pinned to the CPU (while no
    backend has started; one that has is the CPU's, the only one this agent starts)."""
    os.environ.update(TOPOLOGY_ENVIRONMENT)
    try:
        from jax._src import xla_bridge

        started = xla_bridge.backends_are_initialized()
    except Exception:  # a release without it: the variable alone then says it
        started = True
    if not started:
        jax.config.update("jax_platforms", "cpu")


@functools.cache
def _topology(topology_name, chip_config_name, chips_per_host_bounds, num_slices):
    from jax.experimental import topologies

    return topologies.get_topology_desc(
        platform="tpu",
        topology_name=topology_name,
        chip_config_name=chip_config_name,
        chips_per_host_bounds=chips_per_host_bounds,
        num_slices=num_slices,
    )


def opened_platforms():
    """The platforms whose backend this process started or tried to start (a TPU without a
    chip fails, and JAX keeps its error): never ``tpu`` for a topology compile. None where this
    JAX keeps neither."""
    try:
        from jax._src import xla_bridge

        # private, read only: the started backends and those that failed to start
        return sorted({*xla_bridge._backends, *getattr(xla_bridge, "_backend_errors", {})})
    except Exception:
        return None


def placement_for(target):
    """The `Placement` of a step on ``target``'s chips (the request's ``target``)."""
    from .placement import Placement

    topology = _topology(
        target["topology_name"],
        target["chip_config_name"],
        tuple(target["chips_per_host_bounds"]),
        target["num_slices"],
    )
    return Placement(topology, target.get("name") or target["topology_name"])


def placement_notes(entries):
    """The notes of how each entry's step was placed on the target's chips (`Placement.note`),
    taken out of its ``compiled``, once each."""
    notes = []
    for entry in entries:
        note = (entry.get("compiled") or {}).pop("placement", None)
        if note and note not in notes:
            notes.append(note)
    return notes


def memory_of(compiled):
    """``memory_analysis()`` of a compiled step, as the answer's ``compiled`` figures."""
    stats = compiled.memory_analysis()
    return {
        "temp_bytes": int(stats.temp_size_in_bytes),
        "argument_bytes": int(stats.argument_size_in_bytes),
        "output_bytes": int(stats.output_size_in_bytes),
        "alias_bytes": int(stats.alias_size_in_bytes),
        "peak_bytes": _stat(stats, "peak_memory_in_bytes"),
        "host_temp_bytes": _stat(stats, "host_temp_size_in_bytes"),
    }


def _stat(stats, name):
    value = getattr(stats, name, None)
    return int(value) if value is not None else None


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_BYTES = r"([\d.]+)([KMGT]?)(?:i?B)?"
_EXHAUSTED = (  # XLA:TPU's words for a step over the chip's memory, required first
    re.compile(rf"\({_BYTES}\) exceeds available HBM \({_BYTES}\)"),
    re.compile(rf"Used {_BYTES} of {_BYTES} hbm"),
)


def exhausted(exc):
    """``{"required_bytes", "available_bytes", "message"}`` where ``exc`` is XLA's
    ``RESOURCE_EXHAUSTED`` for a step larger than the chip's memory; else None."""
    text = str(exc)
    if "RESOURCE_EXHAUSTED" not in text:
        return None
    for pattern in _EXHAUSTED:
        match = pattern.search(text)
        if match:
            required = float(match[1]) * _UNITS[match[2]]
            available = float(match[3]) * _UNITS[match[4]]
            first = next((line.strip() for line in text.splitlines() if line.strip()), text)
            return {"required_bytes": int(required), "available_bytes": int(available), "message": first}
    return None
