"""The written policies measured on the chip against the best named policy that fits (issue 46,
item 5), from the folder carry.sh makes: each case of cases.json (benchmarks/write_policy_models.py
wrote it) is the model's repository with the written policy's edits applied; its site is advised
there with two candidates, the written policy (now the site's own) and the best named one that
fits, each step run on the local accelerator (`advise --run`: the median of the timed runs).

    python on_chip.py FOLDER [--deadline SECONDS]

Prints one JSON line per case (both policies' measured steps and their ratio), then a summary
line; no case starts after ``--deadline`` seconds. One agent for every case (JAX imported once);
each case's child opens the chip and gives it back.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(sys.argv[1]).resolve()
DEADLINE_S = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--deadline" else 95.0
sys.path.insert(0, str(HERE / "checkout"))  # this folder's jax_lsp, before any other

from jax_lsp.trace import TraceService  # noqa: E402
from jax_lsp.trace.advisor.request import advise  # noqa: E402
from jax_lsp.trace.options import TraceOptions  # noqa: E402

NO_SLOWER = 1.03  # a measured median within 3% of another's is as fast (runs move by that much)


def measure(service: TraceService, case: dict) -> dict:
    root = HERE / case["copy"]
    path, line = case["site"]
    paths = [str(root / p) for p in case.get("paths", [])]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("BASE_PYTHONPATH", "")])
    written, named = case["written"], case["named"]
    begun = time.perf_counter()
    advice = advise(
        service,
        root / path,
        int(line),
        example=f"advise_example.py:{case.get('example', 'example')}",
        root=root,
        cwd=root,
        policies=[named],
        run=True,
        options=TraceOptions(timeout=300, compile_timeout=300),
    )
    steps = {
        ("written" if p.current else "named"): (p.run.step_s if p.run else None) for p in advice.policies
    }
    found = {
        "case": case["copy"],
        "ok": advice.ok,
        "message": advice.message,
        "seconds": time.perf_counter() - begun,
    }
    found.update(written=written, named=named, steps=steps, device=advice.run.device if advice.run else None)
    mine, theirs = steps.get("written"), steps.get("named")
    if mine is not None and theirs:
        found["ratio"] = mine / theirs
        found["no_slower"] = mine / theirs <= NO_SLOWER
    return found


def main() -> int:
    begun = time.perf_counter()
    cases = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
    results = []
    service = TraceService()
    try:
        for case in cases:
            if time.perf_counter() - begun > DEADLINE_S:
                print(json.dumps({"case": case["copy"], "skipped": "past the deadline"}), flush=True)
                continue
            results.append(measure(service, case))
            print(json.dumps(results[-1]), flush=True)
    finally:
        service.shutdown()
    measured = [r for r in results if "ratio" in r]
    slower = [r["case"] for r in measured if not r["no_slower"]]
    summary = {
        "cases": len(cases),
        "measured": len(measured),
        "slower": slower,
        "seconds": time.perf_counter() - begun,
    }
    print(json.dumps({"summary": summary}), flush=True)
    return 0 if measured and not slower else 1


if __name__ == "__main__":
    sys.exit(main())
