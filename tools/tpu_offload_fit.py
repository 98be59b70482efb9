"""On a TPU v5e: does an offloading step that jax-lsp says fits (its device peak, XLA's
peak_memory_in_bytes less its host temporaries) run on the chip, though XLA's peak is over the
chip's HBM? (issue 47; `bash tools/tpu_round.sh offload`, which logs what this prints)

    python3 tools/tpu_offload_fit.py

tests/fixtures/advisor/offload_stack.py's step (16 GiB of its dots offloaded to the host), jitted
on the chip: its memory analysis there, the verdict jax-lsp gives it for v5e-1
(`Advice.fits`'s reading: `Compiled.device_peak_bytes` against the chip's memory), the step's
time over two runs, and the device's `peak_bytes_in_use` after them. Prints one JSON line; exit
0 when the step ran and jax-lsp says it fits.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests" / "fixtures" / "advisor"))


def main() -> int:
    import jax
    import jax.numpy as jnp
    import offload_stack as model

    from jax_lsp.trace.advisor.compiled import Compiled
    from jax_lsp.trace.compile_target import parse_target

    found: dict = {}
    try:
        args = [jnp.ones(s.shape, s.dtype) * 0.01 for s in model.example()["args"]]
        device = jax.devices()[0]
        found["device"] = str(device)
        compiled = jax.jit(jax.grad(model.stack, argnums=(0, 1))).lower(*args).compile()
        stats = compiled.memory_analysis()
        figures = Compiled(
            stats.temp_size_in_bytes,
            stats.argument_size_in_bytes,
            stats.output_size_in_bytes,
            stats.alias_size_in_bytes,
            stats.peak_memory_in_bytes,
            stats.host_temp_size_in_bytes,
        )
        memory = parse_target("v5e-1").memory_bytes
        found.update(figures.to_json())
        found["fits_v5e_1"] = (
            figures.device_peak_bytes is not None
            and memory is not None
            and (figures.device_peak_bytes <= memory)
        )
        seconds = []
        for _ in range(2):
            begun = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            seconds.append(round(time.perf_counter() - begun, 3))
        found["step_s"] = seconds
        found["memory_stats"] = {
            k: v
            for k, v in (device.memory_stats() or {}).items()
            if k in ("peak_bytes_in_use", "bytes_limit")
        }
    except Exception as exc:  # the answer: it did not run
        found["error"] = f"{type(exc).__name__}: {str(exc)[:1500]}"
    print(json.dumps(found, default=str))
    return 0 if found.get("fits_v5e_1") and "error" not in found else 1


if __name__ == "__main__":
    sys.exit(main())
