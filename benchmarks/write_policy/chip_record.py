"""The written policies' round on the chip, kept: on_chip.py's output (one JSON line per case, as
the device tool brought it back) beside what the search predicted for each case
(benchmarks/write_policy_models.py --strict's record.json), as the record
tests/benchmarks/test_write_policy_on_chip.py reads.

    python benchmarks/write_policy/chip_record.py LOG ROUND_RECORD OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def chip_record(log: str, round_record: list[dict]) -> list[dict]:
    """Each measured case: the model, the budgets it was written for, both policies, their
    predicted and measured steps."""
    predicted: dict[tuple[str, str], dict] = {}
    for model in round_record:
        for budget in model["budgets"]:
            if budget.get("case"):
                key = (model["model"], budget["case"]["copy"])
                predicted[key] = {
                    "budget": budget["budget"],
                    "written": budget["written"],
                    "named": budget["named"],
                }
    cases = []
    for line in log.splitlines():
        found = json.loads(line) if line.startswith("{") else {}
        if "steps" not in found:
            continue
        model = found["case"].split("/")[-1].rsplit("-budget", 1)[0]
        search = predicted[(model, found["case"])]
        cases.append(
            {
                "model": model,
                "case": found["case"],
                "budget": search["budget"],
                "device": found["device"],
                "written": {"policy": found["written"], "predicted_s": search["written"]["step_estimate_s"]},
                "named": {"policy": found["named"], "predicted_s": search["named"]["step_estimate_s"]},
                "measured_s": found["steps"],
            }
        )
    return cases


def main() -> int:
    log, round_record, out = sys.argv[1:4]
    cases = chip_record(Path(log).read_text(encoding="utf-8"), json.loads(Path(round_record).read_text()))
    Path(out).write_text(json.dumps(cases, indent=1) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
