"""Trace latency on this machine: cold (a new interpreter) and warm (the agent ready).

    python benchmarks/bench_trace.py [--runs 7]

- cold: a new TraceService per run, so a new interpreter imports jax, then traces (with an
  empty compilation cache);
- warm, repeated: the same policy again with the agent ready (XLA's compilation of the
  probe comes from the trace cache);
- warm, no compile cache: the agent ready, the compilation cache off (a policy whose
  decisions were never compiled before).
Targets: cold under 5 s, warm under 0.5 s. Medians, wall time from request to result.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from jax_lsp.trace import TraceService

POLICY = textwrap.dedent("""
    import jax
    from jax.ad_checkpoint import Offloadable

    def policy(prim, *args, **params):
        if prim is jax.lax.dot_general_p:
            return Offloadable(src="device", dst="pinned_host")
        return prim.name in ("sin", "tanh")

    f = jax.checkpoint(lambda x: x, policy=policy)
""")


def _timed(service: TraceService, path: Path) -> float:
    started = time.perf_counter()
    result = service.trace(path, 5, root=path.parent)
    elapsed = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"trace failed: {result.status}: {result.message}")
    return elapsed


def _summary(name: str, times: list[float], target: float) -> str:
    median = statistics.median(times)
    verdict = "ok" if median < target else "OVER TARGET"
    return (
        f"{name:<28} median {median:6.3f} s  min {min(times):6.3f}  max {max(times):6.3f}  "
        f"n={len(times)}  target < {target:g} s: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.py"
        path.write_text(POLICY, encoding="utf-8")

        cold = []
        for run in range(args.runs):  # worst case: an empty compilation cache each time
            service = TraceService(cache_dir=str(Path(folder) / f"cache-cold-{run}"))
            try:
                cold.append(_timed(service, path))
            finally:
                service.shutdown()

        service = TraceService(cache_dir=str(Path(folder) / "cache-warm"))
        uncached = TraceService(cache_dir="")
        try:
            _timed(service, path)  # start the agent, fill the cache
            warm = [_timed(service, path) for _ in range(args.runs * 2)]
            _timed(uncached, path)  # start the agent
            warm_uncached = [_timed(uncached, path) for _ in range(args.runs)]
        finally:
            service.shutdown()
            uncached.shutdown()

    print(_summary("cold (new interpreter)", cold, 5.0))
    print(_summary("warm, repeated policy", warm, 0.5))
    print(_summary("warm, no compile cache", warm_uncached, 0.5))


if __name__ == "__main__":
    main()
