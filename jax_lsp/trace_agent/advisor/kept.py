"""Executables kept between an advise's compiles and its run (``advise --run`` with compiles):
each candidate's compile keeps the executable it made, and the run on the device loads it
instead of compiling the same step a second time. On a TPU a candidate's compile takes tens of
seconds, and the run compiled each one again: a third to a half of ``advise --run``'s time.

A kept executable is loaded only where it is the run's own step for the run's own devices: the
same JAX, the same platform, kind and number of devices, and the same jaxpr of the step (a model
that traces another path on the accelerator than on the CPU the compile traced on is compiled
again, as before). Anything that fails on the way (a JAX that cannot serialize an executable, a
file gone) keeps or loads nothing: the run then compiles.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re

import jax

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def path_for(folder, policy):
    """Where the executable of the candidate written ``policy`` is kept in ``folder``."""
    return os.path.join(folder, hashlib.sha256(policy.encode()).hexdigest()[:32] + ".pickle")


def keep(path, executable, step, leaves):
    """Write ``executable`` (``jit(step)`` compiled for ``leaves``) to ``path``, with what `load`
    checks. Whether it was kept."""
    try:
        from jax.experimental.serialize_executable import serialize

        record = {
            "jax": jax.__version__,
            "devices": _devices(_flat_shardings(executable.input_shardings)),
            "jaxpr": _fingerprint(step, leaves),
            "executable": serialize(executable),
        }
        partial = f"{path}.{os.getpid()}"
        with open(partial, "wb") as handle:
            pickle.dump(record, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)  # a run never reads half a file
        return True
    except MemoryError:
        raise
    except Exception:
        return False


def load(path, step, inputs):
    """The executable kept at ``path``, loaded, where it is ``jit(step)`` for ``inputs`` on their
    devices; else None."""
    try:
        with open(path, "rb") as handle:
            record = pickle.load(handle)
        if record["jax"] != jax.__version__:
            return None
        if record["devices"] != _devices([leaf.sharding for leaf in inputs if hasattr(leaf, "sharding")]):
            return None
        if record["jaxpr"] != _fingerprint(step, inputs):
            return None
        from jax.experimental.serialize_executable import deserialize_and_load

        return deserialize_and_load(*record["executable"])
    except MemoryError:
        raise
    except Exception:  # none kept (a cached compile), or kept by another JAX: the run compiles
        return None


def _fingerprint(step, leaves):
    """The digest of ``step``'s jaxpr at ``leaves``' shapes and types: the program, whatever
    process traced it (an object shown in it, such as a policy in a checkpoint's parameters, is
    shown without its address, which differs from process to process)."""
    text = _ADDRESS.sub("", str(jax.make_jaxpr(step)(*leaves)))
    return hashlib.sha256(text.encode()).hexdigest()


def _flat_shardings(shardings):
    return jax.tree_util.tree_leaves(shardings, is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))


def _devices(shardings):
    """(platform, device kind, count) of the devices ``shardings`` place on."""
    devices = {device for sharding in shardings for device in sharding.device_set}
    kinds = sorted({(device.platform, getattr(device, "device_kind", "")) for device in devices})
    return kinds, len(devices)
