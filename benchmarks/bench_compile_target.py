"""`advise --target` against JAX's own compile, per model and candidate, and what compiling costs.

    python benchmarks/bench_compile_target.py [--direct topology|chip] [--target v5e-1]
        [--python PY] [--out FILE.json] [--beside-holder]

For each model below (a scanned stack, whose candidates include two offloading policies, and a
stack too large for a v5e chip), runs, each time with a new agent (cold, as a user runs it),

    jax-lsp advise SITE --example SPEC --target TARGET --output-format json   (compiles: a TPU target)
    jax-lsp advise SITE --example SPEC --target TARGET --no-compile           (the estimate alone)

then compiles every candidate's step itself, with JAX's public calls: ``jit(grad(fn))`` of the
model with the candidate's policy, its arguments as ``ShapeDtypeStruct``s, either for the
target's topology (``--direct topology``: ``jax.experimental.topologies``, no TPU needed) or on
the local chip (``--direct chip``: the default backend, run on a TPU machine). It prints, per
candidate, advise's compiled peak and temporaries, the direct compile's, and the largest
difference over every field of ``memory_analysis()`` (the target: none, or under 1%); the
estimate's error against the compiled peak; and per model the median seconds of advise with and
without compiling. ``--beside-holder`` (on a TPU machine): advise once more while another
process holds the chip and computes on it, and check the figures are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
FIXTURES = CHECKOUT / "tests" / "fixtures" / "advisor"
MODELS = ("peak_stack", "too_large_stack")  # each: one site, `layer` scanned under jax.checkpoint
FIELDS = ("temp_bytes", "argument_bytes", "output_bytes", "alias_bytes", "peak_bytes", "host_temp_bytes")
HOLDER = """
import jax, jax.numpy as jnp, sys, time
x = jnp.ones((2048, 2048))
print("holding", jax.devices()[0].platform, flush=True)
end = time.time() + float(sys.argv[1])
steps = 0
while time.time() < end:
    x = (x @ x) / 2048.0
    x.block_until_ready()
    steps += 1
print("steps", steps, flush=True)
"""


def _site(name: str) -> str:
    lines = (FIXTURES / f"{name}.py").read_text(encoding="utf-8").splitlines()
    return f"{name}.py:{next(i for i, text in enumerate(lines, 1) if 'policy=' in text)}"


EXTRA: list[str] = []  # more options for every advise (--memory-limit-mb)


def advise(name: str, target: str, python: str, compile: bool) -> tuple[dict, float]:
    """advise's JSON for the model and the seconds it took (a new agent)."""
    command = [
        sys.executable, "-m", "jax_lsp", "advise", _site(name), "--example", f"{name}.py:example",
        "--target", target, "--output-format", "json", "--timeout", "600", "--interpreter", python,
        "--compile" if compile else "--no-compile", *EXTRA,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=FIXTURES, capture_output=True, text=True, env=env, timeout=900)
    seconds = time.perf_counter() - started
    try:
        return json.loads(done.stdout), seconds
    except ValueError:
        raise SystemExit(f"advise {name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}") from None


def direct_compiles(name: str, policies: list[str], direct: str, target: dict | None) -> dict[str, dict]:
    """Each policy's step compiled with JAX's own calls: ``{policy: memory_analysis() fields}``,
    or ``{"exhausted": message}`` where XLA refuses it for the chip's memory."""
    import jax
    import jax.numpy as jnp

    sys.path.insert(0, str(FIXTURES))
    module = __import__(name)
    example = module.example()
    args = example["args"]
    if direct == "topology":
        from jax.experimental import topologies
        from jax.sharding import NamedSharding, PartitionSpec

        assert target is not None
        topology = topologies.get_topology_desc(
            platform="tpu",
            topology_name=target["topology"],
            chip_config_name="megacore" if target["topology"].startswith(("v4", "v5:")) else "default",
            chips_per_host_bounds=(1, 1, 1) if target["chips"] == 1 else (2, 2, 1),
            num_slices=1,
        )
        mesh = topologies.make_mesh(topology, (len(topology.devices),), ("chips",))
        placed = NamedSharding(mesh, PartitionSpec())
        args = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=placed), args)
    checkpoint = jax.checkpoint
    namespace = {"jax": jax, "jnp": jnp, **vars(jax.checkpoint_policies)}
    found = {}
    for text in policies:
        policy = eval(text, namespace)  # the candidate's expression, as advise wrote it

        def forced(fun, *, _candidate=policy, **options):  # the site's checkpoint, this policy
            return checkpoint(fun, **{**options, "policy": _candidate})

        jax.checkpoint = forced
        try:
            stats = jax.jit(jax.grad(example["fn"], argnums=(0, 1))).lower(*args).compile().memory_analysis()
            found[text] = {
                "temp_bytes": stats.temp_size_in_bytes,
                "argument_bytes": stats.argument_size_in_bytes,
                "output_bytes": stats.output_size_in_bytes,
                "alias_bytes": stats.alias_size_in_bytes,
                "peak_bytes": stats.peak_memory_in_bytes,
                "host_temp_bytes": stats.host_temp_size_in_bytes,
            }
        except Exception as exc:
            if "RESOURCE_EXHAUSTED" not in str(exc):
                raise
            found[text] = {"exhausted": str(exc).splitlines()[0]}
        finally:
            jax.checkpoint = checkpoint
    return found


def _difference(ours: dict | None, theirs: dict) -> float | None:
    """The largest relative difference over `FIELDS` (0.0: equal); None where either did not
    compile (both refused for the chip's memory is agreement: 0.0)."""
    if ours is None or "exhausted" in theirs:
        return 0.0 if ours is None and "exhausted" in theirs else None
    worst = 0.0
    for field in FIELDS:
        a, b = ours.get(field), theirs[field]
        if a != b:
            worst = max(worst, abs(a - b) / max(abs(b), 1))
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--direct", choices=("topology", "chip"), default="topology")
    parser.add_argument("--target", default="v5e-1")
    parser.add_argument("--python", default=sys.executable, help="the agent's interpreter (with libtpu)")
    parser.add_argument("--runs", type=int, default=1, help="advise runs per model and mode (medians)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--beside-holder", action="store_true")
    parser.add_argument("--memory-limit-mb", help="advise's, where its default is not wanted")
    args = parser.parse_args()
    if args.memory_limit_mb:
        EXTRA.extend(["--memory-limit-mb", args.memory_limit_mb])
    if args.direct == "topology":
        os.environ.update(
            {"TPU_SKIP_MDS_QUERY": "1", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1", "JAX_PLATFORMS": "cpu"}
        )
    record: dict = {"target": args.target, "direct": args.direct, "models": {}}
    answers = {}
    for name in MODELS:
        compiled, plain = [], []
        for _ in range(args.runs):
            answer, seconds = advise(name, args.target, args.python, compile=True)
            compiled.append(seconds)
            plain.append(advise(name, args.target, args.python, compile=False)[1])
        answers[name] = answer
        record["models"][name] = {"advise_compile_s": compiled, "advise_estimate_s": plain}
    if args.beside_holder:  # another process opens the chip and computes while advise compiles
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, "600"], stdout=subprocess.PIPE, text=True)
        print("holder:", holder.stdout.readline().strip())
        for name in MODELS:
            beside, seconds = advise(name, args.target, args.python, compile=True)
            same = [p.get("compiled") for p in beside["policies"]] == [
                p.get("compiled") for p in answers[name]["policies"]
            ]
            record["models"][name]["beside_holder"] = {"same_figures": same, "seconds": seconds}
            print(f"{name} beside a holder of the chip: same figures {same} ({seconds:.1f} s)")
        holder.terminate()
        print("holder:", holder.communicate(timeout=30)[0].strip(), "returncode", holder.returncode)
    worst = 0.0
    for name in MODELS:
        answer, times = answers[name], record["models"][name]
        policies = [p["policy"] for p in answer["policies"] if p.get("error") is None]
        direct = direct_compiles(name, policies, args.direct, answer.get("compile_target"))
        rows = []
        print(f"== {name} ({answer.get('compile_target')})")
        print(
            f"   advise: {statistics.median(times['advise_compile_s']):.1f} s compiled, "
            f"{statistics.median(times['advise_estimate_s']):.1f} s estimate only"
        )
        for entry in answer["policies"]:
            if entry.get("error") is not None:
                continue
            theirs = direct[entry["policy"]]
            difference = _difference(entry.get("compiled"), theirs)
            worst = max(worst, difference if difference is not None else float("inf"))
            ours = entry.get("compiled") or {}
            peak = ours.get("peak_bytes")
            estimate = entry.get("peak_bytes")
            error = (estimate - peak) / peak if estimate is not None and peak else None
            rows.append({"policy": entry["policy"], "advise": entry.get("compiled") or entry.get("exhausted"),
                         "direct": theirs, "difference": difference, "fits": entry.get("fits"),
                         "estimate_bytes": estimate, "estimate_error_vs_peak": error})  # fmt: skip
            shown = "refused (does not fit)" if "exhausted" in theirs else f"peak {theirs['peak_bytes']:,}"
            mine = f"peak {peak:,}" if peak is not None else "refused (does not fit)"
            print(
                f"   {entry['policy'][:60]:60}  advise {mine:>26}  direct {shown:>26}  diff {difference}"
                + (f"  estimate {error:+.0%}" if error is not None else "")
            )
        times["rows"] = rows
    print(f"largest difference from JAX's own compile: {worst}")
    if args.out is not None:
        args.out.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0 if worst <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
