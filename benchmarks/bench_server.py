"""Latency and memory of `jax-lsp serve`, with `ruff server` measured the same way for reference.

Drives each server over stdio with a minimal push-diagnostics client (UTF-16) and reports
medians:
- first diagnostics after `didOpen` of a 3,000-line module with 30 policy sites: cold (a
  fresh server process, just initialized; also timed from spawning the process) and warm (the
  same server, another copy of the file);
- latency from a `didChange` to the `publishDiagnostics` for that version, over 200 edits
  (p50, p95), the server's debounce included; the first edit comes --settle seconds after the
  first diagnostics (default 3: the steady state, background work done; 0: typing at once, while
  the workspace index and jedi run, as bench_real measures it);
- resident memory (RSS) after opening 200 modules and receiving their diagnostics.

With `--file PATH` a real module takes the generated one's place (a copy is opened in a
temporary folder; no memory measure) and the targets are ratios to `ast.parse` of its text,
timed in the same run: first diagnostics (cold) within 2 s + 2x, edits p50 <= 1.5x, p95 <= 3x.
E.g. jax's own `jax/_src/ad_checkpoint.py`, whose `policy=` callees only jedi can name:

    pip download --no-deps jax==0.10.2 -d ~/.cache/jax-lsp-corpus/dl   # then unzip the wheel there
    python benchmarks/bench_server.py --file ~/.cache/jax-lsp-corpus/dl/jax/_src/ad_checkpoint.py

    python benchmarks/bench_server.py [--cold-runs 5] [--edits 200] [--modules 200] [--file PATH]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

JAX_LSP = [sys.executable, "-m", "jax_lsp", "serve", "--log-level", "warning"]
RUFF = [shutil.which("ruff") or str(Path(sys.executable).parent / "ruff"), "server"]

POLICY_BLOCK = """

def policy_{n}(prim, *avals, **params):
    if prim.name == "dot_general":
        return True
    if prim.name == "{prim}":
        return {value}
    return False


def block_{n}(x):
    y = jnp.sin(x) * {n}
    return jax.checkpoint(lambda z: jnp.cos(z) @ z, policy=policy_{n})(y)
"""

FILLER = '''

def numeric_{n}(values, scale={scale}):
    """Weighted running total of values above {n}."""
    total = 0.0
    for index, value in enumerate(values):
        if value > {n}:
            total += value * scale
        else:
            total -= value / (index + 1)
    return total
'''


def module_text(lines: int, sites: int, seed: int = 0) -> str:
    """About `lines` lines of ordinary code with `sites` policy sites, a third of them broken."""
    parts = ["import jax\nimport jax.numpy as jnp\nimport numpy as np\n"]
    for n in range(sites):
        value = ["True", "None", "np.any(params)"][n % 3]  # fine, JAX101-ish, JAX103
        parts.append(POLICY_BLOCK.format(n=n + 1000 * seed, prim=f"p{n}", value=value))
    n = 0
    while "".join(parts).count("\n") < lines:
        parts.append(FILLER.format(n=n, scale=round(0.5 + n % 7, 2)))
        n += 1
    return "".join(parts)


class Client:
    """Just enough LSP: framing, requests, answering the server's requests, diagnostics."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.published: dict[str, tuple[int | None, list, float]] = {}
        self.progress_ended: set[str] = set()  # the tokens of the $/progress that ended
        self.changed = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, command: list[str], root: Path) -> Client:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=root,
        )
        client = cls(process)
        capabilities = {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {
                "publishDiagnostics": {"versionSupport": True},
                "synchronization": {"didSave": True},
            },
            "workspace": {"configuration": True, "workspaceFolders": True},
            "window": {"workDoneProgress": True},
        }
        await client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "capabilities": capabilities,
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            },
        )
        client.notify("initialized", {})
        return client

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def notify(self, method: str, params) -> None:
        self._send({"method": method, "params": params})

    async def request(self, method: str, params):
        self.next_id += 1
        future = self.pending[self.next_id] = asyncio.get_running_loop().create_future()
        self._send({"id": self.next_id, "method": method, "params": params})
        return await asyncio.wait_for(future, 120)

    async def _read(self) -> None:
        stdout = self.process.stdout
        while True:
            length = 0
            while (line := await stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            message = json.loads(await stdout.readexactly(length))
            if "id" in message and "method" in message:  # a request from the server
                result = (
                    [None] * len(message["params"]["items"])
                    if message["method"] == "workspace/configuration"
                    else None
                )
                self._send({"id": message["id"], "result": result})
            elif "id" in message:
                self.pending.pop(message["id"]).set_result(message.get("result"))
            elif message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                self.published[params["uri"]] = (
                    params.get("version"),
                    params["diagnostics"],
                    time.perf_counter(),
                )
                self.changed.set()
            elif message.get("method") == "$/progress" and message["params"]["value"]["kind"] == "end":
                self.progress_ended.add(str(message["params"]["token"]))
                self.changed.set()

    async def diagnostics_for(self, uri: str, version: int) -> tuple[list, float]:
        """Wait for the diagnostics of this version; returns them and when they arrived."""
        while True:
            got = self.published.get(uri)
            if got is not None and got[0] in (version, None):
                return got[1], got[2]
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 60)

    def open(self, uri: str, text: str) -> None:
        self.published.pop(uri, None)
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )

    async def open_and_wait(self, uri: str, text: str) -> float:
        started = time.perf_counter()
        self.open(uri, text)
        _, arrived = await self.diagnostics_for(uri, 1)
        return arrived - started

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    async def stop(self) -> None:
        try:
            await self.request("shutdown", None)
            self.notify("exit", None)
            await asyncio.wait_for(self.process.wait(), 10)
        except Exception:
            self.process.kill()
        self.reader.cancel()


async def first_diagnostics(
    command: list[str],
    root: Path,
    text: str,
    cold_runs: int,
    warm_runs: int,
    folder: Path | None = None,
) -> tuple[list[float], list[float], list[float], int]:
    """Times to the first diagnostics of `text` opened as a new file in `folder` (default: the
    workspace `root`): from spawning the server, cold (just initialized) and warm."""
    folder = folder or root
    spawn, cold, warm, found = [], [], [], 0
    for run in range(cold_runs):
        started = time.perf_counter()
        client = await Client.start(command, root)
        path = folder / f"cold_{run}.py"
        path.write_text(text)
        cold.append(await client.open_and_wait(path.as_uri(), text))
        spawn.append(client.published[path.as_uri()][2] - started)
        found = len(client.published[path.as_uri()][1])
        if run == 0:
            for n in range(warm_runs):
                path = folder / f"warm_{n}.py"
                path.write_text(text)
                warm.append(await client.open_and_wait(path.as_uri(), text))
        await client.stop()
    return spawn, cold, warm, found


async def change_latency(
    command: list[str], root: Path, text: str, edits: int, settle: float = 0.0, folder: Path | None = None
) -> list[float]:
    client = await Client.start(command, root)
    path = (folder or root) / "edited.py"
    path.write_text(text)
    uri = path.as_uri()
    await client.open_and_wait(uri, text)
    await asyncio.sleep(settle)  # work the server does after its first answer (jedi) is done
    line = text.count("\n") // 2
    latencies = []
    for version in range(2, edits + 2):
        # Comment out a line of a function, then restore it: every other version has a syntax
        # error (an `if` left without a body), as while typing; every version is analysed.
        if version % 2 == 0:
            change = {
                "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
                "text": "#",
            }
        else:
            change = {
                "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}},
                "text": "",
            }
        started = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        _, arrived = await client.diagnostics_for(uri, version)
        latencies.append(arrived - started)
    await client.stop()
    return latencies


async def memory_after_opening(command: list[str], root: Path, modules: int) -> float:
    client = await Client.start(command, root)
    uris = []
    for n in range(modules):
        path = root / "pkg" / f"module_{n}.py"
        path.parent.mkdir(exist_ok=True)
        text = module_text(300, 3, seed=n)
        path.write_text(text)
        client.open(path.as_uri(), text)
        uris.append(path.as_uri())
    for uri in uris:
        await client.diagnostics_for(uri, 1)
    rss = client.rss_mb()
    await client.stop()
    return rss


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def parse_ms(text: str, runs: int = 21) -> float:
    """Median time of `ast.parse` of `text`: the baseline of the `--file` targets."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        ast.parse(text)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


async def bench(name: str, command: list[str], args: argparse.Namespace, text: str) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as folder:
        root = Path(folder)
        spawn, cold, warm, found = await first_diagnostics(
            command, root, text, args.cold_runs, args.warm_runs
        )
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as folder:
        changes = await change_latency(command, Path(folder), text, args.edits, args.settle)
    rss = float("nan")
    if not args.file:
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as folder:
            rss = await memory_after_opening(command, Path(folder), args.modules)
    return {
        "spawn_ms": 1000 * statistics.median(spawn),
        "cold_ms": 1000 * statistics.median(cold),
        "warm_ms": 1000 * statistics.median(warm),
        "change_p50_ms": 1000 * percentile(changes, 0.5),
        "change_p95_ms": 1000 * percentile(changes, 0.95),
        "rss_mb": rss,
        "diagnostics": found,
        "lines": text.count("\n"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--warm-runs", type=int, default=20)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument("--no-ruff", action="store_true", help="skip the ruff reference")
    parser.add_argument(
        "--file", type=Path, help="a real module to open and edit instead of the generated one"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds between the first diagnostics of the edited file and its first edit",
    )
    args = parser.parse_args()
    text = args.file.read_text(encoding="utf-8") if args.file else module_text(3000, 30)
    ours = asyncio.run(bench("jax-lsp", JAX_LSP, args, text))
    ruff = (
        None if args.no_ruff or not Path(RUFF[0]).exists() else asyncio.run(bench("ruff", RUFF, args, text))
    )
    if args.file:
        parse = parse_ms(text)
        print(
            f"{args.file} ({ours['lines']} lines; jax-lsp reports {ours['diagnostics']} findings); "
            f"ast.parse of its text: {parse:.1f} ms (median)"
        )
        targets = {"cold_ms": 2000 + 2 * parse, "change_p50_ms": 1.5 * parse, "change_p95_ms": 3 * parse}
        keys = ["spawn_ms", "cold_ms", "warm_ms", "change_p50_ms", "change_p95_ms"]
    else:
        parse = None
        print(
            f"3,000-line module ({ours['lines']} lines, 30 policy sites; jax-lsp reports {ours['diagnostics']} findings)"
        )
        targets = {
            "spawn_ms": 1500,
            "cold_ms": 1500,
            "warm_ms": 50,
            "change_p50_ms": 25,
            "change_p95_ms": 60,
            "rss_mb": 150,
        }
        keys = list(targets)
    labels = {
        "spawn_ms": "process start -> first diag ms",
        "cold_ms": "first diagnostics cold ms",
        "warm_ms": "first diagnostics warm ms",
        "change_p50_ms": "didChange->publish p50 ms",
        "change_p95_ms": "didChange->publish p95 ms",
        "rss_mb": f"RSS after {args.modules} modules MB",
    }
    print(f"{'measure (median)':<32}{'jax-lsp':>10}{'target':>10}{'ruff':>10}{'ratio':>8}{'x parse':>9}")
    for key in keys:
        ruff_value = f"{ruff[key]:10.1f}" if ruff else f"{'-':>10}"
        ratio = f"{ours[key] / ruff[key]:7.1f}x" if ruff and ruff[key] else f"{'-':>8}"
        to_parse = f"{ours[key] / parse:8.1f}x" if parse else f"{'-':>9}"
        target = targets.get(key)
        mark = "" if target is None else "  ok" if ours[key] <= target else "  MISSED"
        print(
            f"{labels[key]:<32}{ours[key]:10.1f}{'-' if target is None else f'{target:.0f}':>10}{ruff_value}{ratio}{to_parse}{mark}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
