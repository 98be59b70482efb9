"""The written policies measured on the chip against the best named policy that fits (issue 46,
item 5), from the folder carry.sh makes: each case of cases.json (benchmarks/write_policy_models.py
wrote it) is the model's repository with the written policy's edits applied; its site is advised
there with two candidates, the written policy (now the site's own) and the best named one that
fits, each step run on the local accelerator (`advise --run`: the median of the timed runs).

    python on_chip.py FOLDER OUT

Writes OUT/write_round.json: per case, both policies' measured steps and their ratio. One agent
for every case (JAX imported once); each case's child opens the chip and gives it back.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(sys.argv[1]).resolve()
OUT = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(HERE / "checkout"))

from jax_lsp.trace import TraceService  # noqa: E402
from jax_lsp.trace.advisor.request import advise  # noqa: E402
from jax_lsp.trace.options import TraceOptions  # noqa: E402

NO_SLOWER = 1.03  # a measured median within 3% of another's is as fast (runs move by that much)


def measure(service: TraceService, case: dict) -> dict:
    root = HERE / case["copy"]
    path, line = case["site"]
    paths = [str(root / p) for p in case.get("paths", [])]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("BASE_PYTHONPATH", "")])
    written, named = case["written"]["policy"], case["named"]["policy"]
    begun = time.perf_counter()
    advice = advise(
        service,
        root / path,
        int(line),
        example="advise_example.py:example",
        root=root,
        cwd=root,
        policies=[named] if named != "None" else [],
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
    cases = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    service = TraceService()
    try:
        for case in cases:
            results.append(measure(service, case))
            print(json.dumps(results[-1]), flush=True)
            (OUT / "write_round.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    finally:
        service.shutdown()
    return 0 if all(r.get("no_slower") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
