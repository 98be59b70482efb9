"""The step-time model checked through the product itself, on the chip: `jax-lsp advise --run`
(which, on a TPU machine, compiles every candidate for the local chip and predicts its step, then
runs each step there) for the models of chip_round.py, as a user would run it.

    python benchmarks/step_time/product_round.py --cache DIR --out DIR [--budget-s 500] [--end-s S]
                                                [--only NAME]
    python benchmarks/step_time/product_round.py --table DIR [--record FILE]
        (the table of a round brought back; with --record, its answers kept, less their residuals)

For each model, from the repository's root (a copy, its example at the root, as chip_round.py
makes it): `python -m jax_lsp advise SITE --example EXAMPLE --run --output-format json`, no
other flag. Its JSON is kept whole in OUT/product_round.json (rewritten after each model); the
table then gives, per candidate, the step the product predicted (`step_estimate_s`) against the
step it measured (`run.step_s`), and per model the predicted fastest that fits against the
measured fastest (issue 45's bars: 90% of candidates within 20%, each model's predicted fastest
measured within 3% of the measured fastest) and the product's own "Fastest that fits" pick,
which ranks by the measurement where the steps ran. No model starts after ``--budget-s``, and
each is stopped (the CLI with its agents) by ``--end-s``.
The kept record (benchmarks/records/product_round_v5e.json) is read by
tests/benchmarks/test_product_round_record.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from chip_round import MODELS, _child_environment, _prepare  # noqa: E402

from jax_lsp.trace.advisor import fastest  # noqa: E402
from jax_lsp.trace.advisor.advice import Advice  # noqa: E402

RECORD = "product_round.json"
WITHIN = 0.20  # the bar for one candidate's prediction
FASTEST_WITHIN = 0.03  # and for the predicted fastest, measured against the measured fastest


def advise_run(model, cache: Path, scratch: Path, timeout: float) -> dict:
    """The product's answer for ``model`` (its JSON), or why there is none."""
    root, site, example = _prepare(model, cache, scratch)
    command = [sys.executable, "-m", "jax_lsp", "advise", site, "--example", example, "--run"]
    command += ["--output-format", "json"]
    began = time.perf_counter()
    # a session of its own: at the timeout the CLI and its agents are killed together
    process = subprocess.Popen(
        command,
        cwd=root,
        env=_child_environment(root, model),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        wall_s = time.perf_counter() - began
        return {"status": "timeout", "message": f"no answer in {timeout:.0f} s", "wall_s": wall_s}
    wall_s = time.perf_counter() - began
    try:
        answer = json.loads(stdout)
    except json.JSONDecodeError:
        return {"status": "no json", "message": (stderr or stdout)[-2000:], "wall_s": wall_s}
    return {**answer, "site": site, "wall_s": wall_s}


def without_residuals(record: dict) -> dict:
    """The round's record less each candidate's residuals (what the step's time is not read from)."""
    models = {}
    for name, answer in record["models"].items():
        policies = [{k: v for k, v in p.items() if k != "residuals"} for p in answer.get("policies") or ()]
        models[name] = {**answer, "policies": policies} if policies else answer
    return {**record, "models": models}


def rows(answer: dict) -> list[tuple[str, float | None, float | None]]:
    """(policy, predicted, measured) of every candidate the product answered for."""
    found = []
    for policy in answer.get("policies") or ():
        measured = (policy.get("run") or {}).get("step_s")
        found.append((policy["policy"], policy.get("step_estimate_s"), measured))
    return found


def picks(answer: dict) -> tuple[str | None, str | None]:
    """The product's fastest that fits: by the measured steps (its pick with --run), and by the
    predicted ones alone (the same advice with the runs left out)."""
    advice = Advice.from_contract(answer)
    by_measured = fastest.fastest(advice)
    by_predicted = fastest.fastest(
        replace(advice, policies=tuple(replace(p, run=None) for p in advice.policies))
    )
    return (
        by_measured.policy.policy if by_measured is not None and by_measured.measured else None,
        by_predicted.policy.policy if by_predicted is not None else None,
    )


def table(record: dict) -> tuple[str, int, int, int, int]:
    """The round's table; and the candidates within 20%, those predicted and measured, the models
    whose predicted fastest is measured within 3% of the fastest, and the models compared."""
    lines = ["| model | policy | measured | predicted | error |", "|---|---|---:|---:|---:|"]
    within = counted = good_models = models = 0
    for name, answer in record["models"].items():
        if answer.get("status") != "ok":
            lines.append(f"| {name} | {answer.get('status')}: {str(answer.get('message'))[:80]} | | | |")
            continue
        measured_of = {}
        for policy, predicted, measured in rows(answer):
            if predicted is None or measured is None:
                lines.append(f"| {name} | `{policy[:70]}` | {_ms(measured)} | {_ms(predicted)} | |")
                continue
            error = predicted / measured - 1
            counted += 1
            within += abs(error) <= WITHIN
            measured_of[policy] = measured
            lines.append(f"| {name} | `{policy[:70]}` | {_ms(measured)} | {_ms(predicted)} | {error:+.1%} |")
        by_measured, by_predicted = picks(answer)
        if by_measured in measured_of and by_predicted in measured_of:
            models += 1
            off = measured_of[by_predicted] / measured_of[by_measured] - 1
            good_models += off <= FASTEST_WITHIN
            lines.append(
                f"| {name} | fastest that fits: measured `{by_measured[:50]}`, predicted "
                f"`{by_predicted[:50]}` (measured {off:+.1%}) | | | |"
            )
    return "\n".join(lines), within, counted, good_models, models


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds is not None else "-"


def _summary(record: dict) -> str:
    text, within, counted, good_models, models = table(record)
    return (
        f"{text}\n\n{within} of {counted} candidates predicted within {WITHIN:.0%}; in {good_models} of "
        f"{models} models the predicted fastest that fits is measured within {FASTEST_WITHIN:.0%} of "
        "the measured fastest"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="the repositories' folder")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--budget-s", type=float, default=500.0, help="no model starts after this")
    parser.add_argument("--end-s", type=float, help="every run is stopped by this (default: budget + 300)")
    parser.add_argument("--only", action="append", help="a model's name (repeat; in that order)")
    parser.add_argument("--table", type=Path, help="print the table of the round in this folder")
    parser.add_argument("--record", type=Path, help="with --table, keep the round here")
    args = parser.parse_args(argv)
    if args.table:
        record = json.loads((args.table / RECORD).read_text())
        print(_summary(record))
        if args.record:
            args.record.write_text(json.dumps(without_residuals(record), indent=1) + "\n")
        return 0
    if args.cache is None or args.out is None:
        parser.error("--cache and --out are needed for a round")
    deadline = time.time() + args.budget_s
    end = time.time() + (args.end_s if args.end_s is not None else args.budget_s + 300)
    named = {m.name: m for m in MODELS}
    models = [named[name] for name in args.only] if args.only else list(MODELS)
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="product_round_"))
    record: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "models": {}}
    try:
        for model in models:
            left = deadline - time.time()
            if left <= 0:
                record["models"][model.name] = {"status": "skipped", "message": "the round's deadline passed"}
                continue
            print(f"== {model.name}", flush=True)
            answer = advise_run(model, args.cache, scratch, timeout=end - time.time())
            record["models"][model.name] = answer
            print(f"  {answer.get('status')} in {answer.get('wall_s', 0):.0f} s", flush=True)
            (args.out / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(_summary(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
