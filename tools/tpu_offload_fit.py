"""On a TPU v5e: does an offloading step that jax-lsp says fits (its device peak, XLA's
peak_memory_in_bytes less its host temporaries) run on the chip, though XLA's peak is over the
chip's HBM? (issue 47; run by `bash tools/tpu_round.sh offload`)

    python3 tools/tpu_offload_fit.py OUT_FOLDER

1. `jax-lsp advise` of tests/fixtures/advisor/offload_stack.py for v5e-1, compiling (the agent
   compiles from the topology and opens no chip): its JSON, with the current policy's `fits`.
2. The same step jitted on the chip, run twice: its compiled memory analysis there, the step's
   time, and the device's peak_bytes_in_use, against the advice's device peak.
Writes OUT_FOLDER/offload_fit.json; exit 0 when the step ran and the advice said it fits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FIXTURES = HERE / "tests" / "fixtures" / "advisor"
SITE = FIXTURES / "offload_stack.py"


def _advise() -> dict:
    line = next(i for i, text in enumerate(SITE.read_text().splitlines(), 1) if "policy=policy" in text)
    command = [
        sys.executable,
        "-m",
        "jax_lsp",
        "advise",
        f"{SITE}:{line}",
        "--example",
        "offload_stack.py:example",
    ]
    command += ["--root", str(FIXTURES), "--target", "v5e-1", "--compile", "--output-format", "json"]
    command += ["--policies", "nothing_saveable", "--compile-timeout", "240"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=420, cwd=HERE)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"status": "unreadable", "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}


def _run_on_chip() -> dict:
    import jax
    import jax.numpy as jnp

    sys.path.insert(0, str(FIXTURES))
    import offload_stack as model

    shapes = model.example()["args"]
    args = [jnp.ones(s.shape, s.dtype) * 0.01 for s in shapes]
    device = jax.devices()[0]
    step = jax.jit(jax.grad(model.stack, argnums=(0, 1)))
    compiled = step.lower(*args).compile()
    stats = compiled.memory_analysis()
    seconds = []
    for _ in range(2):
        begun = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        seconds.append(time.perf_counter() - begun)
    return {
        "device": str(device),
        "peak_bytes": stats.peak_memory_in_bytes,
        "host_temp_bytes": stats.host_temp_size_in_bytes,
        "temp_bytes": stats.temp_size_in_bytes,
        "argument_bytes": stats.argument_size_in_bytes,
        "step_s": seconds,
        "peak_bytes_in_use": (device.memory_stats() or {}).get("peak_bytes_in_use"),
        "bytes_limit": (device.memory_stats() or {}).get("bytes_limit"),
    }


def main() -> int:
    out = Path(sys.argv[1])
    advice = _advise()
    current = next((p for p in advice.get("policies", []) if p.get("current")), {})
    found: dict = {"advice_status": advice.get("status"), "current": current, "advice": advice}
    try:
        found["chip"] = _run_on_chip()
    except Exception as exc:  # the answer: it did not run
        found["chip"] = {"error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
    (out / "offload_fit.json").write_text(json.dumps(found, indent=1, default=str))
    summary = {
        k: found["chip"].get(k)
        for k in ("peak_bytes", "host_temp_bytes", "peak_bytes_in_use", "step_s", "error")
    }
    print(
        json.dumps({"fits": current.get("fits"), "compiled": current.get("compiled"), **summary}, default=str)
    )
    return 0 if current.get("fits") is True and "error" not in found["chip"] else 1


if __name__ == "__main__":
    sys.exit(main())
