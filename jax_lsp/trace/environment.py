"""The environment of every process jax-lsp starts to run JAX: stated only here.

Traces, residuals, estimates, compiles and the advisor's candidates run JAX on the CPU of this
machine, whatever accelerator it has (`child_environment`). The user's accelerator is busy
with their own job while they edit: a TPU admits one process (libtpu locks
``/tmp/libtpu_lockfile``, and a second process fails to start), and a JAX process preallocates
75% of a GPU's memory. On the CPU a helper works beside that job, and answers the same on every
machine. Only ``advise --run`` opens the accelerator, on request, in an agent of its own started
with the user's environment as it is (`device_environment`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CPU_ONLY = {
    "JAX_PLATFORMS": "cpu",  # JAX starts no accelerator backend, so it never opens the chip
    "CUDA_VISIBLE_DEVICES": "",  # and CUDA sees no GPU, should anything in the process ask it
    "TPU_SKIP_MDS_QUERY": "1",  # libtpu, if it loads, does not wait for a TPU VM's metadata server
}


def child_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with JAX kept off every accelerator."""
    environment = dict(os.environ if base is None else base)
    environment.pop("JAX_PLATFORM_NAME", None)  # JAX's older spelling of JAX_PLATFORMS
    environment.update(CPU_ONLY)
    return environment


def device_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) as the user set it, for the agent whose
    child runs the candidates on the local accelerator (``advise --run``); on a GPU, JAX then
    allocates what the steps use instead of 75% of the GPU's memory, unless the user said
    otherwise."""
    environment = dict(os.environ if base is None else base)
    environment.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return environment
