"""The policy advisor on a Flax transformer block with the shapes of a 70B-parameter model.

    python benchmarks/bench_advise.py [--runs 5]

d_model 8192, MLP 28672 (SwiGLU), 64 heads, sequence 4096, batch 1, bf16, under `nn.remat`.
Nothing is compiled or allocated at full size: the example gives `jax.eval_shape` parameters.

- baseline: JAX's own `saved_residuals` of the same function (the block under `nn.remat` with
  each candidate policy), in this warm process; median per policy;
- the advisor's own work per policy, in this process (the agent's code, called directly):
  the forward trace (once per advise, shared by all candidates) divided by the number of
  candidates, plus the median per-candidate replay; its ratio to the baseline (target <= 1.5x);
- warm advise of all candidates through the trace agent (the agent started and the installed
  packages the model imports loaded by a first advise; before each run the model file is
  edited, a comment changed, as the editor path sees it): wall time from request to answer, the
  CPU time of the agent's child and of the worker it forks for half of the candidates (where it
  may use two CPUs), the medians of the child's phases (loading the site, the example's own
  code, the forward trace, the candidates), how many candidates were traced (the others answer
  JAX alike to one traced before), and the child's peak memory (targets <= 0.5 s, <= 500 MB);
- cold: a new agent (a new interpreter importing jax), one advise, wall time;
- with --compile: one advise with `compile` in this process, each candidate's step compiled
  for the CPU: its estimated peak, compiled temporaries, the estimate's error and the compile
  time per candidate.
Every candidate's estimated peak (`peak_bytes`) is part of each advise timed above.
Medians over --runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

MODEL = textwrap.dedent("""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    D, F, H, S = 8192, 28672, 64, 4096
    BF16 = dict(dtype=jnp.bfloat16, param_dtype=jnp.bfloat16, use_bias=False)


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.RMSNorm(dtype=jnp.bfloat16, param_dtype=jnp.bfloat16)(x)
            q = checkpoint_name(nn.DenseGeneral((H, D // H), **BF16)(h), "q")
            k = checkpoint_name(nn.DenseGeneral((H, D // H), **BF16)(h), "k")
            v = checkpoint_name(nn.DenseGeneral((H, D // H), **BF16)(h), "v")
            a = checkpoint_name(nn.dot_product_attention(q, k, v), "attn")
            x = x + nn.DenseGeneral(D, axis=(-2, -1), **BF16)(a)
            h = nn.RMSNorm(dtype=jnp.bfloat16, param_dtype=jnp.bfloat16)(x)
            m = checkpoint_name(nn.silu(nn.Dense(F, **BF16)(h)) * nn.Dense(F, **BF16)(h), "mlp")
            return x + nn.Dense(D, **BF16)(m)


    POLICY = jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    Remat = nn.remat(Block, policy=POLICY)


    def loss(params, x):
        return jnp.mean(Remat().apply(params, x).astype(jnp.float32) ** 2)


    def example():
        x = jax.ShapeDtypeStruct((1, S, D), jnp.bfloat16)
        params = jax.eval_shape(Remat().init, jax.random.key(0), x)
        return {"fn": loss, "args": (params, x)}
""").lstrip()
SITE_LINE = next(i for i, line in enumerate(MODEL.splitlines(), 1) if "policy=POLICY" in line)


PHASES = ("load", "example", "forward", "advise")  # the child's timings, in order


def _median_ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.1f} ms"


def in_process(folder: Path, runs: int) -> None:
    import jax

    try:
        from jax.ad_checkpoint import saved_residuals  # type: ignore[attr-defined, unused-ignore]
    except ImportError:
        from jax._src.ad_checkpoint import saved_residuals

    from jax_lsp.trace_agent.advisor import driver

    path = folder / "block70b.py"
    params = {"path": str(path), "line": SITE_LINE, "root": str(folder), "example": "block70b.py:example"}
    driver.advise(params)  # warm: flax imported, JAX's tracing caches as a user would have them
    results, advisor_cpu = [], []
    for _ in range(runs):
        started_cpu = time.process_time()
        results.append(driver.advise(params))
        advisor_cpu.append(time.process_time() - started_cpu - results[-1]["timings"]["example_s"])
    result = results[-1]
    policies = [p["policy"] for p in result["policies"]]
    n = len(policies)

    sys.path.insert(0, str(folder))
    import block70b  # the same function, loaded as Python loads it

    example = block70b.example()
    fn_args = example["args"]
    baseline: dict[str, list[float]] = {}
    baseline_cpu: dict[str, list[float]] = {}
    for text in policies:
        policy = eval(text, {"jax": jax, **vars(block70b)})  # noqa: S307 (the benchmark's own text)
        import flax.linen as nn

        remat = nn.remat(block70b.Block, policy=policy)

        def loss(p, x, remat=remat):
            return block70b.jnp.mean(remat().apply(p, x).astype(block70b.jnp.float32) ** 2)

        saved_residuals(loss, *fn_args)
        times, cpu = [], []
        for _ in range(runs):
            started, started_cpu = time.perf_counter(), time.process_time()
            saved_residuals(loss, *fn_args)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        baseline[text] = times
        baseline_cpu[text] = cpu

    base = statistics.median([statistics.median(t) for t in baseline.values()])
    forward = statistics.median([r["timings"]["forward_s"] for r in results])
    replay = statistics.median([t for r in results for t in r["timings"]["per_policy_s"]])
    per_policy = forward / n + replay
    total = statistics.median([r["timings"]["forward_s"] + r["timings"]["advise_s"] for r in results])
    print(f"{n} candidate policies at the 70B-shaped block; medians of {runs} runs")
    print(
        f"{'policy':<62} {'device':>10} {'host':>10} {'peak (est.)':>12} {'recompute':>12} {'saved_residuals':>16}"
    )
    for entry in result["policies"]:
        short = entry["policy"].removeprefix("jax.checkpoint_policies.")
        short = short if len(short) <= 60 else short[:57] + "..."
        mark = "*" if entry["current"] else " "
        print(
            f"{mark}{short:<61} {entry['device_bytes'] / 2**30:>7.2f} GiB {entry['host_bytes'] / 2**30:>6.2f} GiB "
            f"{(entry['peak_bytes'] or 0) / 2**30:>8.2f} GiB "
            f"{(entry['recompute_flops'] or 0) / 1e12:>8.2f} TFLOP {_median_ms(baseline[entry['policy']]):>16}"
        )
    print()
    print(f"baseline, JAX's saved_residuals per policy (warm):  {base * 1000:.1f} ms")
    print(f"advisor: forward trace once per advise:            {forward * 1000:.1f} ms")
    print(f"advisor: per-candidate replay:                     {replay * 1000:.1f} ms")
    print(
        f"advisor's own work per policy (forward/{n} + replay): {per_policy * 1000:.1f} ms "
        f"= {per_policy / base:.2f}x the baseline (target <= 1.5x)"
    )
    print(f"advisor: all {n} candidates in process:              {total * 1000:.1f} ms")
    base_cpu = statistics.median([statistics.median(t) for t in baseline_cpu.values()])
    own_cpu = statistics.median(advisor_cpu) / n
    print(
        f"CPU time (robust to a loaded machine): baseline {base_cpu * 1000:.1f} ms per policy, advisor "
        f"{own_cpu * 1000:.1f} ms per policy (all its work but the example, / {n}) = {own_cpu / base_cpu:.2f}x"
    )
    print(
        f"example (eval_shape of init, the user's code):     {result['timings']['example_s'] * 1000:.1f} ms"
    )


def compiled(folder: Path) -> None:
    from bench_peak import candidate_lines  # beside this script

    from jax_lsp.trace_agent.advisor import driver

    params = {"path": str(folder / "block70b.py"), "line": SITE_LINE, "root": str(folder)}
    result = driver.advise({**params, "example": "block70b.py:example", "compile": True})
    print()
    print("\n".join(candidate_lines(result["policies"])))
    seconds = [e["compile_s"] for e in result["policies"] if e.get("compile_s") is not None]
    if seconds:
        print(
            f"compile time per candidate: median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s"
        )


def through_agent(folder: Path, runs: int) -> None:
    from jax_lsp.trace import TraceService
    from jax_lsp.trace.advisor.request import advise
    from jax_lsp.trace.options import TraceOptions

    path = folder / "block70b.py"
    options = {"example": "block70b.py:example", "root": folder, "options": TraceOptions(timeout=120)}
    cold = []
    for _ in range(max(1, runs // 2)):
        service = TraceService()
        try:
            started = time.perf_counter()
            advice = advise(service, path, SITE_LINE, **options)
            cold.append(time.perf_counter() - started)
            if not advice.ok:
                raise SystemExit(f"advise failed: {advice.status}: {advice.message}")
        finally:
            service.shutdown()

    service = TraceService()
    try:
        advise(service, path, SITE_LINE, **options)  # the agent loads what the model imports
        time.sleep(2)  # ... after it answered: let it finish
        warm, rss, cpu, worker_cpu, phases = [], [], [], [], []
        for run in range(runs):
            path.write_text(f"{MODEL}# edit {run}\n", encoding="utf-8")  # as after the user typed
            started = time.perf_counter()
            advice = advise(service, path, SITE_LINE, **options)
            warm.append(time.perf_counter() - started)
            rss.append(dict(advice.timings).get("max_rss_mb"))
            cpu.append(dict(advice.timings).get("cpu_s"))
            worker_cpu.append(dict(advice.timings).get("worker_cpu_s"))
            phases.append([dict(advice.timings).get(f"{phase}_s") for phase in PHASES])
        n = len(advice.policies)
        traced = dict(advice.timings).get("traced")
    finally:
        service.shutdown()
    print()
    print(f"warm advise of all {n} candidates through the agent: {_median_ms(warm)} (target <= 500 ms)")
    used = [c for c in cpu if c is not None]
    if used:
        print(f"  CPU time of the child and its worker:              {statistics.median(used) * 1000:.1f} ms")
    in_worker = [c for c in worker_cpu if c is not None]
    if in_worker:
        print(
            f"  ... of which the worker's:                        {statistics.median(in_worker) * 1000:.1f} ms"
        )
    if all(None not in run for run in phases):
        medians = "  ".join(
            f"{phase} {statistics.median(run[i] for run in phases) * 1000:.0f}"
            for i, phase in enumerate(PHASES)
        )
        print(f"  the child's phases (ms):                          {medians}")
    if traced is not None:
        print(f"  candidates traced:                                {traced} of {n}")
    peaks = [r for r in rss if r is not None]
    if peaks:
        print(
            f"  child's peak memory (RSS):                       {statistics.median(peaks):.0f} MB (target <= 500 MB)"
        )
    print(f"cold advise (a new interpreter importing jax):     {statistics.median(cold):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--part", choices=("all", "process", "agent"), default="all")
    parser.add_argument("--compile", action="store_true", help="also compile every candidate's step once")
    args = parser.parse_args()
    if hasattr(os, "getloadavg"):
        print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "block70b.py").write_text(MODEL, encoding="utf-8")
        if args.part in ("all", "process"):
            in_process(Path(folder), args.runs)
        if args.part in ("all", "agent"):
            through_agent(Path(folder), args.runs)
        if args.compile:
            compiled(Path(folder))


if __name__ == "__main__":
    main()
