"""The step-time model's calibration on the chip: the measured steps of chip_round.py's rounds
against the model's predictions, and the constants that fit them best.

    python benchmarks/step_time/fit.py --round DIR [--round DIR ...] [--record FILE]
    python benchmarks/step_time/fit.py --check [--record FILE]
    python benchmarks/step_time/fit.py --predict MODEL=ADVISE.json ... --heldout FILE
    python benchmarks/step_time/fit.py --heldout FILE --round DIR

With rounds (each DIR holds a round's step_round.json and hlo.tar.gz, as the device tool brought
them back), every measured candidate's compiled HLO (the chip's own compile) is read by the
agent's `step_cost`, the same reading `advise --compile` does, and the record (default
benchmarks/records/step_time_v5e.json) is written: per candidate its measured step, XLA's
cost_analysis() and memory_analysis() on the chip, the cost read from the HLO, the step the
model predicts with the constants of jax_lsp/trace/advisor/step_time.py and its error; per model
the measured and the predicted fastest; and the constants a least-squares fit (of the log of
predicted over measured) finds, to be copied into step_time.py by hand. `--check` predicts again
from the record's costs with step_time.py's constants and prints the table.

A held-out check: `--predict` writes (to `--heldout`) the steps `advise --target v5e-1 --compile
--output-format json` predicted, from this machine, for candidates no round has measured, before
a round measures them; `--heldout` with `--round` then compares, and writes the measurements in.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from jax_lsp.trace.advisor.step_time import CHIPS, Chip, estimate, read_step_cost  # noqa: E402
from jax_lsp.trace_agent.advisor.step_cost import step_cost  # noqa: E402

DEFAULT_RECORD = HERE.parent / "records" / "step_time_v5e.json"
WITHIN = (0.10, 0.20)
FASTEST_WITHIN = 0.03  # the predicted fastest, measured, within this of the measured fastest
FITTED = ("matmul_flop_s", "hbm_bytes_s", "on_chip_bytes_s", "host_bytes_s")


def _short(policy: str) -> str:
    return policy.removeprefix("jax.checkpoint_policies.")


def read_rounds(folders: list[Path]) -> tuple[list[dict], list[dict]]:
    """The measured candidates of the rounds (a candidate measured in two rounds: the median of
    its medians) with the cost read from the chip's HLO, and each round's chip rates."""
    found: dict[tuple[str, str], dict] = {}
    rates = []
    for folder in folders:
        record = json.loads((folder / "step_round.json").read_text())
        rates.append({"round": folder.name, **(record.get("chip") or {})})
        with tarfile.open(folder / "hlo.tar.gz") as archive:
            texts = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]
        for model, answer in record["models"].items():
            for run in answer.get("runs") or ():
                if "step_s" not in run:
                    continue
                text = gzip.decompress(texts[f"{model}/{run['index']}.hlo.gz"]).decode()
                key = (model, run["policy"])
                entry = found.setdefault(
                    key,
                    {
                        "model": model,
                        "policy": run["policy"],
                        "current": run["current"],
                        "steps_s": [],
                        "runs": 0,
                        "memory": run["memory"],
                        "xla": {k: run["cost"].get(k) for k in ("flops", "bytes accessed")},
                        "cost": step_cost(text),
                    },
                )
                entry["steps_s"].append(run["step_s"])
                entry["runs"] += len(run["runs_s"])
    entries = list(found.values())
    for entry in entries:
        entry["measured_s"] = statistics.median(entry["steps_s"])
    return entries, rates


def predict(entries: list[dict], chip: Chip) -> None:
    """Each entry's ``predicted_s`` and ``error`` with ``chip``."""
    for entry in entries:
        cost = read_step_cost(entry["cost"])
        CHIPS["fit"] = replace(chip, name="fit")
        found = estimate(cost, "fit")
        del CHIPS["fit"]
        assert found is not None
        entry["predicted_s"] = found.seconds
        entry["bound"] = found.bound
        entry["error"] = found.seconds / entry["measured_s"] - 1


def by_model(entries: list[dict]) -> dict[str, dict]:
    """Per model: the measured fastest, the predicted fastest and how it measured against it."""
    models: dict[str, list[dict]] = {}
    for entry in entries:
        models.setdefault(entry["model"], []).append(entry)
    found = {}
    for model, mine in models.items():
        measured = min(mine, key=lambda e: e["measured_s"])
        predicted = min(mine, key=lambda e: e["predicted_s"])
        gap = predicted["measured_s"] / measured["measured_s"] - 1
        found[model] = {
            "candidates": len(mine),
            "measured_fastest": _short(measured["policy"]),
            "measured_fastest_s": measured["measured_s"],
            "predicted_fastest": _short(predicted["policy"]),
            "predicted_fastest_measured_s": predicted["measured_s"],
            "gap": gap,
            "within": gap <= FASTEST_WITHIN,
        }
    return found


def fit(entries: list[dict], start: Chip) -> Chip:
    """The constants (`FITTED`, and the overlap of host transfers outside loops) that minimise the
    squared log error of the predictions."""
    from scipy.optimize import minimize  # type: ignore[import-untyped]

    def chip_of(x) -> Chip:
        # a rate no candidate bounds may grow without end: 1e300 stands for "never the bound"
        rates: dict[str, Any] = dict(zip(FITTED, (math.exp(min(v, 690.0)) for v in x[:4])))
        overlap = 1 / (1 + math.exp(-max(min(x[4], 690.0), -690.0)))
        return replace(start, **rates, f32_flop_s=rates["matmul_flop_s"], host_overlap=overlap)

    def loss(x) -> float:
        predict(entries, chip_of(x))
        return sum(math.log(1 + e["error"]) ** 2 for e in entries)

    overlap = min(max(start.host_overlap, 0.01), 0.99)
    x = [math.log(getattr(start, name)) for name in FITTED] + [math.log(overlap / (1 - overlap))]
    found = math.inf
    for _ in range(5):  # Nelder-Mead again from where it stopped, until it finds no better
        best = minimize(
            loss, x, method="Nelder-Mead", options={"maxiter": 20000, "maxfev": 20000, "fatol": 1e-12}
        )
        if best.fun >= found - 1e-12:
            break
        x, found = best.x, best.fun
    return chip_of(x)


def leave_one_model_out(entries: list[dict], start: Chip) -> dict:
    """Each model predicted with the constants fitted on the other models alone: per candidate
    its error, and the summary of those predictions."""
    predicted = []
    for model in sorted({e["model"] for e in entries}):
        others = [dict(e) for e in entries if e["model"] != model]
        mine = [dict(e) for e in entries if e["model"] == model]
        predict(mine, fit(others, start))
        predicted += mine
    return {
        "summary": summary(predicted),
        "errors": {f"{e['model']}: {_short(e['policy'])}": e["error"] for e in predicted},
    }


def summary(entries: list[dict]) -> dict:
    return {
        **{f"within_{round(w * 100)}": sum(abs(e["error"]) <= w for e in entries) for w in WITHIN},
        "candidates": len(entries),
        "models": by_model(entries),
    }


def show(entries: list[dict], record_summary: dict) -> None:
    print(f"{'model':<16} {'policy':<58} {'measured':>9} {'predicted':>9} {'error':>7}  bound")
    for e in entries:
        print(
            f"{e['model']:<16} {_short(e['policy'])[:58]:<58} {e['measured_s'] * 1e3:7.2f} ms "
            f"{e['predicted_s'] * 1e3:7.2f} ms {e['error']:+7.1%}  {e['bound']}"
        )
    show_summary(record_summary)


def show_summary(record_summary: dict) -> None:
    n = record_summary["candidates"]
    print(f"within 10%: {record_summary['within_10']}/{n}, within 20%: {record_summary['within_20']}/{n}")
    for model, m in record_summary["models"].items():
        print(
            f"  {model}: measured fastest {m['measured_fastest']} {m['measured_fastest_s'] * 1e3:.2f} ms; "
            f"predicted fastest {m['predicted_fastest']} measured {m['predicted_fastest_measured_s'] * 1e3:.2f} "
            f"ms ({m['gap']:+.1%}{', within 3%' if m['within'] else ', NOT within 3%'})"
        )


def write_predictions(sources: list[str], heldout: Path, record: Path) -> None:
    """The predicted steps of ``MODEL=ADVISE.json`` sources, but those the record measured."""
    measured = {(c["model"], c["policy"]) for c in json.loads(record.read_text())["candidates"]}
    predictions = []
    for source in sources:
        model, path = source.split("=", 1)
        for entry in json.loads(Path(path).read_text())["policies"]:
            if (model, entry["policy"]) not in measured and entry.get("step_estimate_s") is not None:
                predictions.append(
                    {"model": model, "policy": entry["policy"], "predicted_s": entry["step_estimate_s"]}
                )
    heldout.write_text(
        json.dumps(
            {
                "made": "before the round, from advise --target v5e-1 --compile on a machine without a TPU",
                "candidates": predictions,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"{len(predictions)} predictions: {heldout}")


def compare_heldout(heldout: Path, folders: list[Path]) -> None:
    """The held-out predictions against a round's measurements, written into ``heldout``."""
    found = json.loads(heldout.read_text())
    measured = {}
    for folder in folders:
        for model, answer in json.loads((folder / "step_round.json").read_text())["models"].items():
            for run in answer.get("runs") or ():
                if "step_s" in run:
                    measured[(model, run["policy"])] = run["step_s"]
    for entry in found["candidates"]:
        step = measured.get((entry["model"], entry["policy"]))
        entry["measured_s"] = step
        entry["error"] = entry["predicted_s"] / step - 1 if step else None
        shown = f"{step * 1e3:7.2f} ms {entry['error']:+7.1%}" if step else "not measured"
        print(
            f"{entry['model']:<16} {_short(entry['policy'])[:50]:<50} {entry['predicted_s'] * 1e3:7.2f} ms {shown}"
        )
    heldout.write_text(json.dumps(found, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round", type=Path, action="append", default=[])
    parser.add_argument("--record", type=Path, default=DEFAULT_RECORD)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--predict", action="append", default=[], help="MODEL=ADVISE.json (repeat)")
    parser.add_argument("--heldout", type=Path)
    args = parser.parse_args(argv)
    if args.heldout is not None:
        if args.predict:
            write_predictions(args.predict, args.heldout, args.record)
        else:
            compare_heldout(args.heldout, args.round)
        return 0
    chip = CHIPS["v5e"]
    if args.check:
        record = json.loads(args.record.read_text())
        entries = record["candidates"]
        predict(entries, chip)
        show(entries, summary(entries))
        return 0
    entries, rates = read_rounds(args.round)
    fitted = fit(entries, chip)
    predict(entries, chip)  # with step_time.py's constants: what the record states
    record_summary = summary(entries)
    show(entries, record_summary)
    constants = {name: getattr(fitted, name) for name in (*FITTED, "host_overlap")}
    print("fitted:", {k: f"{v:.3g}" for k, v in constants.items()})
    left_out = leave_one_model_out(entries, chip)
    print("each model predicted with the constants fitted on the others:")
    show_summary(left_out["summary"])
    record = {
        "device": "TPU v5e (one chip of the device tool's v5litepod), jax 0.10.2",
        "rounds": rates,
        "model_constants": {
            name: getattr(chip, name)
            for name in (
                "matmul_flop_s",
                "f32_flop_s",
                "hbm_bytes_s",
                "on_chip_bytes_s",
                "host_bytes_s",
                "operation_s",
                "step_s",
                "host_overlap",
                "error",
            )
        },
        "fitted_constants": constants,
        "summary": record_summary,
        "leave_one_model_out": left_out,
        "candidates": entries,
    }
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(f"record: {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
