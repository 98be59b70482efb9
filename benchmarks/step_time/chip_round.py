"""Each candidate's training step measured on the local accelerator, with its compile's figures:
the measurements the step-time model (jax_lsp/trace/advisor/step_time.py) is calibrated on.

    python benchmarks/step_time/chip_round.py --cache DIR --out DIR [--budget-s 360] [--only NAME]

For each model (below), in a process of its own (one process at a time holds a TPU), the advisor
itself (`jax_lsp.trace_agent.advisor.driver.advise`, as `advise --run` calls it) traces the
site with the example and builds every candidate's step exactly as `advise --compile` compiles
it (`step_function` of the candidate's jaxpr); then, in place of `advise --run`'s own loop, each
step is lowered, compiled for the device and timed: two untimed runs, then timed runs (at least
5, up to 30 or 1.5 s) whose median is the step. A candidate whose lowered module equals an
earlier one's is that one's measurement (`same_as`), not compiled again.

Recorded per candidate: the step's runs and median, `cost_analysis()` and `memory_analysis()` of
the compile on the device, the compile's seconds, and the compiled HLO text (one gzip file per
candidate in OUT/hlo.tar.gz) so that the model can be checked against the chip's own program.
First, in a process of its own, the device's own rates (`measure_chip`: matrix products,
HBM, the host link, a launch, a loop's iteration). Everything goes to OUT/step_round.json, rewritten after each model
(with --light, that file alone: no rates, no HLO; --skip MODEL=POLICY names a candidate not to
measure; --only runs the models named, in that order).

Models (their repositories come from the cache folder, as benchmarks/advise_models.py makes
them; the examples are this checkout's benchmarks/advise_models/NAME.py:example_chip and
benchmarks/step_time/*.py). A deadline (--budget-s) stops starting candidates when it passes;
what is left is recorded as not measured.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
EXAMPLES = HERE.parent / "advise_models"
EXAMPLE_COPY = "advise_example.py"
RECORD = "step_round.json"  # the round's record in OUT
WARM_UP = 2
SKIP_VARIABLE = "STEP_ROUND_SKIP"  # the child's: a JSON list of the candidates not to measure
MIN_RUNS, MAX_RUNS, RUN_SECONDS = 5, 30, 1.5


@dataclass(frozen=True)
class Model:
    name: str
    folder: str  # the repository's folder in the cache ("" for a model of benchmarks/step_time/)
    site: str  # PATH:LINE relative to the folder; a step_time model's LINE is found ("policy=")
    example: str  # FUNCTION of benchmarks/advise_models/NAME.py, or FILE.py:FUNCTION here
    paths: tuple[str, ...] = ()  # folders of the repository to put on PYTHONPATH
    skip: tuple[str, ...] = ()  # candidates not to measure (measured in an earlier round)


MODELS = (
    Model("attention_stack", "", "attention_stack.py", "attention_stack.py:example"),
    Model(
        "haliax",
        "haliax-f41e7d40c63dc486b69c5d854270a9158fe3dd39",
        "src/haliax/_src/scan.py:186",
        "example_chip",
        ("src",),
    ),
    Model("nanodo", "nanodo-10aefdeed40a63293daf112b91a5538cd24fa3a4", "nanodo/model.py:65", "example_chip"),
    Model(
        "tunix",
        "tunix-c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3",
        "tunix/models/llama3/model.py:583",
        "example_chip",
    ),
    Model(
        "recurrentgemma",
        "recurrentgemma-2efa84dac0e68e63547a27a18fa943c98f1c312e",
        "recurrentgemma/jax/griffin.py:61",
        "example_chip",
    ),
    Model("f32_stack", "", "f32_stack.py", "f32_stack.py:example"),
)


def policy_line(path: Path) -> int:
    """The line of the first `policy=` argument in a benchmarks/step_time model."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for keyword in node.keywords if isinstance(node, ast.Call) else ():
            if keyword.arg == "policy":
                return keyword.value.lineno
    raise SystemExit(f"{path}: no policy= argument")


def _timed(compiled, inputs):
    import jax

    for _ in range(WARM_UP):
        jax.block_until_ready(compiled(*inputs))
    seconds: list[float] = []
    began = time.perf_counter()
    while len(seconds) < MAX_RUNS and (len(seconds) < MIN_RUNS or time.perf_counter() - began < RUN_SECONDS):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*inputs))
        seconds.append(time.perf_counter() - start)
    return {"step_s": statistics.median(seconds), "runs_s": seconds}


def _cost(compiled) -> dict:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, (list, tuple)):  # older releases: one dict per program
        analysis = analysis[0] if analysis else {}
    return {key: float(value) for key, value in dict(analysis or {}).items()}


def measure_candidates(work, jaxpr_of, deadline: float, hlo_folder: Path, answer_file: Path):
    """In place of `on_device.run_each`: each of ``work``'s candidates compiled on the device,
    its figures and its timed runs; what is measured so far in ``answer_file`` after each (a
    process stopped at its deadline keeps them)."""
    import jax

    from jax_lsp.trace_agent.advisor.example import short_error
    from jax_lsp.trace_agent.advisor.on_device import random_inputs
    from jax_lsp.trace_agent.advisor.peak import step_function
    from jax_lsp.trace_agent.advisor.target import memory_of

    device = jax.devices()[0]
    inputs = random_inputs(work.leaves)
    lowered_seen: dict[str, str] = {}
    runs = []
    skipped = json.loads(os.environ.get(SKIP_VARIABLE) or "[]")
    for index, candidate in enumerate(work.candidates):
        entry: dict = {"policy": candidate.text, "current": candidate.current, "index": index}
        runs.append(entry)
        if time.time() > deadline:
            entry["skipped"] = "the round's deadline passed"
            continue
        if candidate.text in skipped:
            entry["skipped"] = "measured in an earlier round"
            continue
        try:
            step = step_function(work.forward, jaxpr_of(candidate), work.leaves, work.positional)
            began = time.perf_counter()
            lowered = jax.jit(step).lower(*inputs)
            digest = hashlib.sha256(lowered.as_text().encode()).hexdigest()
            entry["lower_s"] = time.perf_counter() - began
            if digest in lowered_seen:
                entry["same_as"] = lowered_seen[digest]
                continue
            lowered_seen[digest] = candidate.text
            began = time.perf_counter()
            compiled = lowered.compile()
            entry["compile_s"] = time.perf_counter() - began
            entry["cost"] = _cost(compiled)
            entry["memory"] = memory_of(compiled)
            text = compiled.as_text()
            (hlo_folder / f"{index}.hlo.gz").write_bytes(gzip.compress(text.encode()))
            entry.update(_timed(compiled, inputs))
            del compiled
        except MemoryError:
            raise
        except Exception as exc:  # too large for the device, or rejected
            entry["error"] = short_error(exc)
        print(f"  {candidate.text[:70]:<70} {_show(entry)}", flush=True)
        answer_file.write_text(json.dumps({"status": "partial", "runs": runs}, default=str))
    return {
        "status": "ok",
        "message": "",
        "platform": device.platform,
        "device": getattr(device, "device_kind", str(device)),
        "runs": runs,
    }


def _median_seconds(function, *args, runs=10):
    import jax

    for _ in range(2):
        jax.block_until_ready(function(*args))
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def measure_chip(scale: int = 1) -> dict:
    """The device's own rates, each the median of 10 runs: matrix products in bfloat16 and
    float32, an elementwise pass over HBM, copies over the host link each way, a tiny step (the
    launch's cost) and a loop's iteration."""
    import jax
    import jax.numpy as jnp

    device = jax.devices()[0]
    found: dict = {"device": getattr(device, "device_kind", str(device))}
    key = jax.random.key(0)
    for dtype, n in ((jnp.bfloat16, 8192 // scale), (jnp.float32, 4096 // scale)):
        a = jax.random.normal(key, (n, n), dtype)
        seconds = _median_seconds(jax.jit(lambda x, y: x @ y), a, a)
        found[f"matmul_{jnp.dtype(dtype).name}_flop_s"] = 2 * n**3 / seconds
    big = jax.random.normal(key, (2**29 // scale,), jnp.bfloat16)  # 1 GiB
    seconds = _median_seconds(jax.jit(lambda x: x * 2 + 1), big)
    found["hbm_bytes_s"] = 2 * big.nbytes / seconds
    try:
        host = jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host")
        here = jax.sharding.SingleDeviceSharding(device, memory_kind="device")
        part = big[: 2**27 // scale]  # 256 MiB
        found["to_host_bytes_s"] = part.nbytes / _median_seconds(lambda x: jax.device_put(x, host), part)
        on_host = jax.device_put(part, host)
        found["from_host_bytes_s"] = part.nbytes / _median_seconds(lambda x: jax.device_put(x, here), on_host)
    except Exception as exc:
        found["host_error"] = f"{type(exc).__name__}: {exc}"[:300]
    scalar = jnp.ones((), jnp.float32)
    found["launch_s"] = _median_seconds(jax.jit(lambda x: x + 1), scalar, runs=50)
    steps = 1000
    looped = jax.jit(lambda x: jax.lax.fori_loop(0, steps, lambda i, v: v * 1.0001 + 1, x))
    found["loop_iteration_s"] = (_median_seconds(looped, jnp.ones((8, 128))) - found["launch_s"]) / steps
    return found


def _show(entry: dict) -> str:
    if "step_s" in entry:
        return f"{entry['step_s'] * 1e3:8.2f} ms (compile {entry['compile_s']:.1f} s)"
    return entry.get("error") or entry.get("same_as") or entry.get("skipped") or "?"


def measure_model(
    root: Path, site: str, example: str, deadline: float, hlo_folder: Path, answer_file: Path
) -> dict:
    """The child's work: the advisor's `advise` with `run`, its loop replaced by ours."""
    from jax_lsp.trace_agent.advisor import driver

    driver.run_each = lambda work, jaxpr_of: measure_candidates(
        work, jaxpr_of, deadline, hlo_folder, answer_file
    )
    path, line = site.rsplit(":", 1)
    params = {"path": str(root / path), "line": int(line), "root": str(root), "cwd": str(root)}
    return driver.advise({**params, "example": example, "run": True})


def _prepare(model: Model, cache: Path, scratch: Path) -> tuple[Path, str, str]:
    """The model's root (a copy, its example at the root), its site and its example spec."""
    if not model.folder:
        root = scratch / model.name
        shutil.copytree(HERE, root, ignore=shutil.ignore_patterns("__pycache__"))
        site = f"{model.site}:{policy_line(root / model.site)}"
        return root, site, model.example
    source = cache / model.folder
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is missing (benchmarks/advise_models.py says how to make it)")
    root = scratch / model.name
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".git"))
    shutil.copyfile(EXAMPLES / f"{model.name}.py", root / EXAMPLE_COPY)
    return root, model.site, f"{EXAMPLE_COPY}:{model.example}"


def _child_environment(root: Path, model: Model) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(CHECKOUT), *(str(root / p) for p in model.paths), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONUNBUFFERED"] = "1"
    env[SKIP_VARIABLE] = json.dumps(list(model.skip))
    return env


def _rates(scratch: Path, scale: int) -> dict | None:
    chip_file = scratch / "chip.json"
    print("== the chip's own rates", flush=True)
    try:
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--chip", str(chip_file), str(scale)], timeout=90
        )
    except subprocess.TimeoutExpired:
        print("  the rates' process ran out of time", flush=True)
    found = json.loads(chip_file.read_text()) if chip_file.exists() else None
    print(f"  {found}", flush=True)
    return found


def run_round(models, cache: Path, out: Path, deadline: float, scale: int = 1, light: bool = False) -> dict:
    """Each model measured (`measure_model`, in a process of its own); the record written to
    ``out / RECORD`` after each. ``light``: neither the chip's rates nor the HLO archive."""
    scratch = Path(tempfile.mkdtemp(prefix="step_round_"))
    record: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "models": {}}
    record["chip"] = None if light else _rates(scratch, scale)
    archive = tarfile.open(scratch / "hlo.tar.gz" if light else out / "hlo.tar.gz", "w:gz")
    try:
        for model in models:
            began = time.perf_counter()
            print(f"== {model.name}", flush=True)
            if time.time() > deadline:
                record["models"][model.name] = {"status": "skipped", "message": "the round's deadline passed"}
                continue
            try:
                root, site, example = _prepare(model, cache, scratch)
            except FileNotFoundError as exc:
                record["models"][model.name] = {"status": "missing", "message": str(exc)}
                print(f"  {exc}", flush=True)
                continue
            hlo_folder = scratch / f"{model.name}-hlo"
            hlo_folder.mkdir()
            answer_file = scratch / f"{model.name}.json"
            command = [sys.executable, str(Path(__file__).resolve()), "--child", str(root), site, example]
            command += [str(deadline), str(hlo_folder), str(answer_file)]
            try:
                subprocess.run(
                    command,
                    cwd=root,
                    env=_child_environment(root, model),
                    timeout=max(deadline - time.time(), 0) + 40,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                print("  the model's process ran out of time", flush=True)
            answer = json.loads(answer_file.read_text()) if answer_file.exists() else {"status": "no answer"}
            answer["site"], answer["example"] = site, example
            answer["wall_s"] = time.perf_counter() - began
            record["models"][model.name] = answer
            for hlo in sorted(hlo_folder.iterdir()):
                archive.add(hlo, arcname=f"{model.name}/{hlo.name}")
            (out / RECORD).write_text(json.dumps(record, indent=1, default=str) + "\n")
    finally:
        archive.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return record


def _facts() -> dict:
    import platform

    import jax

    facts = {"jax": jax.__version__, "python": platform.python_version()}
    try:
        import jaxlib

        facts["jaxlib"] = jaxlib.__version__
    except Exception:
        pass
    return facts


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--chip":
        Path(argv[1]).write_text(json.dumps(measure_chip(int(argv[2]))))
        return 0
    if argv and argv[0] == "--child":
        root, site, example, deadline, hlo_folder, answer_file = argv[1:7]
        sys.path.insert(0, str(CHECKOUT))
        try:
            answer = measure_model(
                Path(root), site, example, float(deadline), Path(hlo_folder), Path(answer_file)
            )
        except Exception as exc:  # the advisor's own error (an AgentError), or the model's
            answer = {"status": "error", "message": f"{type(exc).__name__}: {exc}"[:2000]}
            if hasattr(exc, "result"):
                answer.update(exc.result())
        Path(answer_file).write_text(json.dumps(answer, default=str))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="the repositories' folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=360.0, help="no candidate starts after this")
    parser.add_argument("--only", action="append", help="a model's name (repeat)")
    parser.add_argument(
        "--small", action="store_true", help="each model's small example (a check on the CPU)"
    )
    parser.add_argument("--light", action="store_true", help="only the record: no rates, no HLO")
    parser.add_argument("--skip", action="append", default=[], help="MODEL=POLICY not to measure (repeat)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.budget_s
    named = {m.name: m for m in MODELS}
    models = [named[name] for name in args.only] if args.only else list(MODELS)  # in the order asked
    skipped = [entry.split("=", 1) for entry in args.skip]
    models = [replace(m, skip=tuple(p for name, p in skipped if name == m.name)) for m in models]
    if args.small:
        models = [
            replace(m, example=m.example.replace("example_chip", "example") + "_small" * (not m.folder))
            for m in models
        ]
    record = run_round(models, args.cache, args.out, deadline, 8 if args.small else 1, args.light)
    record["facts"] = _facts()
    (args.out / RECORD).write_text(json.dumps(record, indent=1, default=str) + "\n")
    measured = sum(
        1 for answer in record["models"].values() for run in answer.get("runs") or () if "step_s" in run
    )
    print(f"measured {measured} steps; record {args.out / RECORD}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
