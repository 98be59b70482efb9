"""The advise pipeline's cache of answers: an unchanged site advised again, cold against warm,
on the command line and in the editor.

    python -m compileall -q jax_lsp   # as an installed wheel is (CONTRIBUTING.md, "Start-up time")
    python benchmarks/bench_advise_cache.py [--runs 5] [--cold-runs N] [--cli-runs N] [--target cpu]
                                            [--budget SIZE] [--interpreter PYTHON]

A scanned stack of checkpointed blocks and its example, written to a temporary project, advised
with each candidate compiled for --target:
- CLI cold: `jax-lsp advise SITE --compile` in a new process, the project's cache folder emptied
  first: a new agent imports JAX, traces the example, compiles each candidate;
- CLI warm: the same command again, nothing changed: answered from the cache folder, no agent
  (target: at most 2 s);
- editor first: the first click of "Advise policy" (the lens's command, `jax-lsp.advisePolicy`)
  through a real `jax-lsp serve` over LSP: its agent starts, then the steps run;
- editor cold: the lens again, the cache folder emptied first (the agent up);
- editor warm: the lens clicked again, nothing changed (target: at most 0.5 s on the CPU, at most
  1 s for --target v5e-1 on a TPU VM).
Medians over --runs warm runs and --cold-runs cold ones (default: --runs; --cli-runs 0 leaves the
command line out); each warm median is printed with its ratio to the cold one of this run.

On a TPU VM (the round on the chip: the lens only, in about a minute; the warm runs' ratio is then
to the first click), with libtpu installed:

    python benchmarks/bench_advise_cache.py --target v5e-1 --cli-runs 0 --cold-runs 0 --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import JAX_LSP, Client  # noqa: E402

MODEL = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

LAYERS, WIDTH, TOKENS = 8, 512, 256


def block(h, w):
    a = checkpoint_name(jnp.tanh(h @ w[0]), "hidden")
    return h + jnp.tanh(a @ w[1]), None


layer = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)  # jax-lsp: example=model.py:example


def loss(ws, x):
    h, _ = jax.lax.scan(layer, x, ws)
    return jnp.mean(h**2)


def example():
    ws = jax.ShapeDtypeStruct((LAYERS, 2, WIDTH, WIDTH), jnp.float32)
    return {"fn": loss, "args": (ws, jax.ShapeDtypeStruct((TOKENS, WIDTH), jnp.float32))}
"""


def write_project(folder: Path) -> tuple[Path, int]:
    (folder / "pyproject.toml").write_text("[project]\nname = 'bench'\n", encoding="utf-8")
    path = folder / "model.py"
    path.write_text(MODEL.lstrip(), encoding="utf-8")
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "policy=" in text)
    time.sleep(0.05)  # a clock tick: an answer is not kept for a file written as its request is sent
    return path, line


def clear_cache(folder: Path) -> None:
    shutil.rmtree(folder / ".jax-lsp-cache", ignore_errors=True)


def cli_run(folder: Path, site: str, target: str, interpreter: str | None, budget: str | None) -> float:
    command = [
        sys.executable,
        "-m",
        "jax_lsp",
        "advise",
        site,
        "--compile",
        "--target",
        target,
        "--output-format",
        "json",
    ]
    command += ["--interpreter", interpreter] if interpreter else []
    command += ["--budget", budget] if budget else []
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1) or '"status": "ok"' not in done.stdout:
        raise SystemExit(f"advise failed ({done.returncode}): {done.stdout[-400:]}{done.stderr[-800:]}")
    return seconds


def cli(
    folder: Path, site: str, runs: int, target: str, interpreter: str | None, budget: str | None
) -> tuple[list, list]:
    cold, warm = [], []
    for _ in range(runs):
        clear_cache(folder)
        cold.append(cli_run(folder, site, target, interpreter, budget))
        warm.append(cli_run(folder, site, target, interpreter, budget))
    return cold, warm


async def editor(
    folder: Path,
    path: Path,
    runs: int,
    cold_runs: int,
    target: str,
    interpreter: str | None,
    budget: str | None,
) -> tuple[list, list, list]:
    advise = {"target": target, **({"budget": budget} if budget else {})}
    settings = {"advise": advise, **({"interpreter": interpreter} if interpreter else {})}
    client = await Client.start(JAX_LSP, folder)
    first: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    try:
        client.notify("workspace/didChangeConfiguration", {"settings": {"jax-lsp": settings}})
        uri = path.as_uri()
        client.open(uri, path.read_text())
        lens = await _advise_lens(client, uri)
        first.append(await _click(client, lens))  # the agent starts
        for run in range(max(runs, cold_runs)):
            if run < cold_runs:
                clear_cache(folder)
                cold.append(await _click(client, lens))
            if run < runs:
                warm.append(await _click(client, lens))
    finally:
        await client.stop()
    return first, cold, warm


async def _advise_lens(client: Client, uri: str) -> dict:
    for _ in range(600):
        lenses = await client.request("textDocument/codeLens", {"textDocument": {"uri": uri}}) or []
        found = [
            lens for lens in lenses if (lens.get("command") or {}).get("command") == "jax-lsp.advisePolicy"
        ]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise SystemExit("no advise lens")


async def _click(client: Client, lens: dict) -> float:
    command = lens["command"]
    started = time.perf_counter()
    result = await client.request(
        "workspace/executeCommand", {"command": command["command"], "arguments": command["arguments"]}
    )
    seconds = time.perf_counter() - started
    if not result or result.get("status") != "ok":
        raise SystemExit(f"the lens's advise failed: {str(result)[:400]}")
    return seconds


def report(label: str, times: list[float], cold: list[float] | None = None, cold_name: str = "cold") -> None:
    median = statistics.median(times)
    ratio = f"  ({median / statistics.median(cold):.3f}x the {cold_name} median)" if cold else ""
    print(f"{label:<44} {median:8.3f} s{ratio}  runs: {[round(t, 3) for t in times]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="warm runs of each")
    parser.add_argument("--cold-runs", type=int, help="cold runs of each (default: --runs)")
    parser.add_argument(
        "--cli-runs", type=int, help="runs of the command line, cold and warm (default: --runs)"
    )
    parser.add_argument("--target", default="cpu", help="what --compile compiles for (cpu, v5e-1...)")
    parser.add_argument(
        "--budget",
        help="advise.budget (--budget): in the editor, uncompiled advice is then checked by compiling",
    )
    parser.add_argument("--interpreter", help="the Python the agent runs in (one with libtpu for a TPU)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path, line = write_project(folder)
        cli_runs = args.runs if args.cli_runs is None else args.cli_runs
        cold_runs = args.runs if args.cold_runs is None else args.cold_runs
        if cli_runs:
            cli_cold, cli_warm = cli(
                folder, f"{path}:{line}", cli_runs, args.target, args.interpreter, args.budget
            )
            report(f"CLI cold: advise --compile --target {args.target}", cli_cold)
            report("CLI warm (target <= 2 s)", cli_warm, cli_cold)
        editor_runs = editor(folder, path, args.runs, cold_runs, args.target, args.interpreter, args.budget)
        ed_first, ed_cold, ed_warm = asyncio.run(editor_runs)
        report("editor first: the lens's advise, agent starting", ed_first)
        if ed_cold:
            report("editor cold: the lens's advise, agent up", ed_cold)
        bound = "1 s" if args.target != "cpu" else "0.5 s"
        report(
            f"editor warm (target <= {bound})", ed_warm, ed_cold or ed_first, "cold" if ed_cold else "first"
        )


if __name__ == "__main__":
    main()
