"""Warm re-advise: a model whose project imports take at least 5 s, advised again in the editor.

    python benchmarks/bench_advise_warm.py [--runs 3] [--import-s 5.5]

The model is a package, `lm/`, in the shape of a transformer LM with its own module system:
`lm/__init__.py` imports its tables, and `lm/tables.py` builds a token table at import
until it has used --import-s seconds of CPU (real work, whatever the machine's speed or load).

- baseline: importing `lm` in a new interpreter that has jax loaded (the model's own import cost);
- cold: the first advise of the site through the editor's path (`TraceService`, as the server
  uses it) in an agent that is up (jax imported) but has never seen the project;
- at once: the advise again right after the first answer, which waits while the agent imports
  the project's modules;
- warm: the advise again, the file unchanged, once the agent has imported the project's modules
  (target: at most 2 s);
- the CLI: `jax-lsp advise --no-cache` in a new process (a new agent each run: always cold;
  the answers the cache keeps are benchmarks/bench_advise_cache.py's).
Medians over --runs, each with its ratio to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from jax_lsp.trace import TraceService
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.result import TraceResult

PROJECT = {
    "lm/__init__.py": """
        from .tables import VOCAB
    """,
    "lm/tables.py": """
        import time

        _start = time.process_time()
        TOKENS = {}
        while time.process_time() - _start < IMPORT_S:
            for i in range(10_000):
                TOKENS[f"tok{len(TOKENS) % 50_000}-{i}"] = hash((i, len(TOKENS)))
        VOCAB = 512
    """,
    "lm/block.py": """
        import jax
        import jax.numpy as jnp
        from jax.ad_checkpoint import checkpoint_name

        from . import VOCAB


        def layer(x, w1, w2):
            h = checkpoint_name(jnp.tanh(x @ w1), "hidden")
            return jnp.tanh(h @ w2)


        block = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)


        def loss(params, x):
            for w1, w2 in params:
                x = block(x, w1, w2)
            return jnp.mean(x**2)
    """,
    "example.py": """
        import jax
        import jax.numpy as jnp

        from lm import VOCAB
        from lm.block import loss


        def example():
            w = jax.ShapeDtypeStruct((VOCAB, VOCAB), jnp.float32)
            params = [(w, w)] * 4
            return {"fn": loss, "args": (params, jax.ShapeDtypeStruct((64, VOCAB), jnp.float32))}
    """,
}
SPEC = "example.py:example"


def write_project(folder: Path, import_s: float) -> Path:
    for name, code in PROJECT.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(code).lstrip()
        path.write_text(text.replace("IMPORT_S", repr(import_s)))
    return folder / "lm" / "block.py"


def site_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "policy=" in line)


def import_seconds(folder: Path) -> float:
    code = "import jax, time; t = time.perf_counter(); import lm; print(time.perf_counter() - t)"
    return float(
        subprocess.run(
            [sys.executable, "-c", code], cwd=folder, check=True, capture_output=True, text=True
        ).stdout
    )


def settled(service: TraceService) -> None:
    """Wait until the agent has imported what the last child used: it answers ``info`` after."""
    agent = service.agent()
    if isinstance(agent, TraceResult):
        raise SystemExit(f"no agent: {agent.message}")
    agent.request("info", TraceOptions().to_params())[1].result()


def timed_advise(service: TraceService, path: Path, line: int, folder: Path) -> float:
    started = time.perf_counter()
    advice = advise(service, path, line, example=SPEC, root=folder, options=TraceOptions(timeout=120))
    seconds = time.perf_counter() - started
    if not advice.ok:
        raise SystemExit(f"advise failed: {advice.message}")
    return seconds


def editor(folder: Path, path: Path, runs: int) -> tuple[list[float], list[float], list[float]]:
    """(cold advises, each in a new agent; the advise again at once; warm re-advises)."""
    line = site_line(path)
    cold, at_once, warm = [], [], []
    for run in range(runs):
        service = TraceService()
        try:
            settled(service)  # the agent is up, jax imported: what the first lens click meets
            cold.append(timed_advise(service, path, line, folder))
            at_once.append(timed_advise(service, path, line, folder))  # waits for the preload
            if run == 0:
                for _ in range(runs):
                    settled(service)  # the user's next click comes after the agent's preload
                    warm.append(timed_advise(service, path, line, folder))
        finally:
            service.shutdown()
    return cold, at_once, warm


def cli(folder: Path, path: Path, runs: int) -> list[float]:
    command = [
        sys.executable,
        "-m",
        "jax_lsp",
        "advise",
        f"{path}:{site_line(path)}",
        "--example",
        SPEC,
        "--timeout",
        "120",
        "--no-cache",
    ]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, cwd=folder, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def report(label: str, times: list[float], baseline: float) -> None:
    median = statistics.median(times)
    print(
        f"{label:<50} {median:7.2f} s  ({median / baseline:4.2f}x the imports)  runs: {[round(t, 2) for t in times]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--import-s", type=float, default=5.5, help="CPU seconds lm/tables.py spends at import"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = write_project(folder, args.import_s)
        imports = [import_seconds(folder) for _ in range(args.runs)]
        baseline = statistics.median(imports)
        report("baseline: `import lm` (jax loaded)", imports, baseline)
        cold, at_once, warm = editor(folder, path, args.runs)
        report("editor: first advise (agent up, cold project)", cold, baseline)
        report("editor: advise again at once (agent preloading)", at_once, baseline)
        report("editor: advise again (warm, target <= 2 s)", warm, baseline)
        report("CLI: `jax-lsp advise --no-cache` (new process: cold)", cli(folder, path, args.runs), baseline)


if __name__ == "__main__":
    main()
