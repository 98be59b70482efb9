"""Memory of `jax-lsp serve` over a long editing session, through real LSP traffic.

The server opens maxtext's `src/maxtext/layers/decoders.py` (corpus.MAXTEXT_REPO, made by hand
once as benchmarks/corpus.py says) in a copy of its repository; once the workspace index has
ended (its $/progress; with --type-at-once, at once: the index then reads one file each time
it waits INDEX_WAIT_AT_MOST_S for a pause that never comes, and the server's memory grows
with it until it ends, bounded by the project), the client sends --edits incremental changes,
each waiting for the diagnostics of its version: every 4th edit breaks a
policy line (`save_only_these_names(*names)` loses its `*`: JAX116, with a fix) and the next
restores it; the two others add a comment to a line and remove it. So the buffer cycles through
a few texts, and whatever the server keeps should be bounded by what is open, not by how often
it changed. It prints the server's resident memory (RSS) every --every edits, the growth from
edit --mark to the end against the target (at most 5%), the latency from a `didChange` to the
`publishDiagnostics` of its version (p50, p95; the debounce included; p95 target 50 ms), and
whether the diagnostics at the end equal those of a fresh `jax-lsp check` of the final text (the
edits go on to the next break for that: one more after 9,000, so there is a finding to compare).

With --tracemalloc the server runs under `tracemalloc` from edit --mark on (slower: latencies
are not comparable), and the allocation sites that grew most from the edit after the next
--every edits to the end are printed (what is alive in both is the current texts' state).

    python benchmarks/bench_memory.py [--edits 9000] [--mark 1000] [--tracemalloc]
                                      [--type-at-once] [--cache-dir DIR] [--repo DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
sys.path[:0] = [str(REPO), str(BENCHMARKS)]

from bench_server import JAX_LSP, Client, percentile
from corpus import DEFAULT_CACHE, MAXTEXT_REPO, local_root

os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

FILE = "src/maxtext/layers/decoders.py"
POLICY_LINE = "    return jax.checkpoint_policies.save_only_these_names(*names)\n"
COMMENT_LINE = '    inputs = checkpoint_name(inputs, "decoder_layer_input")\n'
COMMENT = "  # edited"
INDEX_TIMEOUT_S = 600
RSS_GROWTH_LIMIT = 0.05
P95_LIMIT_MS = 50.0

# The server, with tracemalloc started by its first SIGUSR1 (tracing its start-up, imports
# included, takes minutes); each next one writes a snapshot to the next file named by argv[1].
TRACED_SERVER = """
import os, signal, sys, tracemalloc
targets = sys.argv.pop(1).split(os.pathsep)
def trace(signum, frame):
    if not tracemalloc.is_tracing():
        tracemalloc.start(8)
    else:
        target = targets.pop(0)
        tracemalloc.take_snapshot().dump(target + ".tmp")
        os.rename(target + ".tmp", target)
signal.signal(signal.SIGUSR1, trace)
from jax_lsp.cli import run
run()
"""


def line_of(text: str, line: str) -> int:
    """The 0-based number of the one line of `text` that is `line`."""
    lines = text.splitlines(keepends=True)
    assert lines.count(line) == 1, f"{line!r} is not one line of {FILE}"
    return lines.index(line)


def edit(step: int, policy_line: int, comment_line: int) -> dict:
    """The incremental change of edit number `step` (1-based), as LSP content changes."""

    def change(line: int, start: int, end: int, text: str) -> dict:
        where = {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}
        return {"range": where, "text": text}

    star = POLICY_LINE.index("*")
    end = len(COMMENT_LINE) - 1
    return [
        change(comment_line, end, end + len(COMMENT), ""),  # step % 4 == 0: remove the comment
        change(policy_line, star, star + 1, ""),  # 1: break the policy (JAX116)
        change(policy_line, star, star, "*"),  # 2: restore it
        change(comment_line, end, end, COMMENT),  # 3: add the comment
    ][step % 4]


def apply_change(text: str, change: dict) -> str:
    lines = text.splitlines(keepends=True)
    start, end = change["range"]["start"], change["range"]["end"]
    line = lines[start["line"]]
    lines[start["line"]] = line[: start["character"]] + change["text"] + line[end["character"] :]
    return "".join(lines)


def check_command(path: Path) -> list[dict]:
    """A fresh `jax-lsp check` of the file on disk: its findings as the LSP client sees them."""
    done = subprocess.run(
        [sys.executable, "-m", "jax_lsp", "check", "--no-cache", "--output-format", "json", str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"jax-lsp check failed: {done.stderr}")
    return sorted(
        (
            f["code"],
            (f["line"] - 1, f["column"] - 1, f["end_line"] - 1, f["end_column"] - 1),
            f["message"],
            [(fix["title"], [edit["new_text"] for edit in fix["edits"]]) for fix in f["fixes"]],
        )
        for f in json.loads(done.stdout)
    )


def as_findings(diagnostics: list) -> list:
    """The diagnostics as `check_command` gives findings (the file's text is ASCII: UTF-16
    columns are code points)."""

    def span(where: dict) -> tuple[int, int, int, int]:
        start, end = where["start"], where["end"]
        return start["line"], start["character"], end["line"], end["character"]

    return sorted(
        (
            d["code"],
            span(d["range"]),
            d["message"],
            [(fix["title"], [edit["newText"] for edit in fix["edits"]]) for fix in d["data"]["fixes"]],
        )
        for d in diagnostics
    )


async def snapshot(client: Client, path: Path) -> None:
    os.kill(client.process.pid, signal.SIGUSR1)
    while not path.exists():
        await asyncio.sleep(0.05)


async def index_done(client: Client) -> None:
    """Wait for the end of the workspace index's $/progress."""
    while not any(token.startswith("jax-lsp-index") for token in client.progress_ended):
        client.changed.clear()
        await asyncio.wait_for(client.changed.wait(), INDEX_TIMEOUT_S)


async def session(root: Path, args: argparse.Namespace, traces: tuple[Path, Path] | None) -> dict:
    """The edits; with `traces`, snapshots of tracemalloc (started at edit --mark) written there
    --every edits later and at the end."""
    command = JAX_LSP
    if traces is not None:
        named = os.pathsep.join(map(str, traces))
        command = [sys.executable, "-c", TRACED_SERVER, named, *JAX_LSP[JAX_LSP.index("serve") :]]
    client = await Client.start(command, root)
    path = root / FILE
    uri, text = path.as_uri(), path.read_text(encoding="utf-8")
    policy_line, comment_line = line_of(text, POLICY_LINE), line_of(text, COMMENT_LINE)
    await client.open_and_wait(uri, text)
    if not args.type_at_once:
        await index_done(client)
    rss, latencies = {}, []

    async def send(step: int) -> list:
        nonlocal text
        change = edit(step, policy_line, comment_line)
        text = apply_change(text, change)
        started = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": step + 1}, "contentChanges": [change]},
        )
        diagnostics, arrived = await client.diagnostics_for(uri, step + 1)
        latencies.append(arrived - started)
        return diagnostics

    for step in range(1, args.edits + 1):
        await send(step)
        if step % args.every == 0 or step in (args.mark, args.edits):
            rss[step] = client.rss_mb()
            print(f"edit {step:>6}: RSS {rss[step]:6.1f} MB", flush=True)
        if traces is not None and step == args.mark:
            os.kill(client.process.pid, signal.SIGUSR1)
        if traces is not None and step == args.mark + args.every:
            await snapshot(client, traces[0])
        if traces is not None and step == args.edits:
            await snapshot(client, traces[1])
    step = args.edits + 1
    while step % 4 != 1:  # on to the next break: a finding and its fix to compare, not none
        await send(step)
        step += 1
    diagnostics = await send(step)
    await client.stop()
    path.write_text(text, encoding="utf-8")
    return {
        "rss": rss,
        "latencies": latencies,
        "served": as_findings(diagnostics),
        "checked": check_command(path),
    }


def print_growth(traces: tuple[Path, Path], since: int, top: int = 25) -> None:
    old, new = (tracemalloc.Snapshot.load(str(path)) for path in traces)
    stats = new.compare_to(old, "traceback")
    total = sum(stat.size_diff for stat in stats)
    print(f"\ngrowth from edit {since} to the end: {total / 1024:+.1f} KiB; the sites that grew most:")
    for stat in stats[:top]:
        if stat.size_diff <= 0:
            break
        print(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
        for line in stat.traceback.format(limit=8, most_recent_first=True):
            print(f"      {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=9000)
    parser.add_argument("--mark", type=int, default=1000, help="the edit growth is measured from")
    parser.add_argument("--every", type=int, default=1000, help="print RSS every this many edits")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument(
        "--type-at-once",
        action="store_true",
        help="edit from the first diagnostics on, while the workspace index runs (it then reads a "
        "file every 2 s: its memory grows over the edits)",
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--repo", type=Path, help="maxtext's repository (default: the corpus' copy)")
    args = parser.parse_args()
    source = args.repo or local_root(MAXTEXT_REPO, args.cache_dir)
    if source is None:
        print(f"maxtext's repository is missing: {MAXTEXT_REPO.how}")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as temporary:
        root = Path(temporary) / source.name
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".jax-lsp-cache"))
        traces = (Path(temporary) / "before", Path(temporary) / "after") if args.tracemalloc else None
        result = asyncio.run(session(root, args, traces))
        if traces is not None:
            print_growth(traces, args.mark + args.every)
    rss, latencies = result["rss"], result["latencies"]
    growth = rss[args.edits] / rss[args.mark] - 1
    p50, p95 = 1000 * percentile(latencies, 0.5), 1000 * percentile(latencies, 0.95)
    same = result["served"] == result["checked"]
    print(f"\n{FILE} of {MAXTEXT_REPO.name} {MAXTEXT_REPO.version[:12]}, {args.edits} edits")
    print(
        f"RSS at edit {args.mark}: {rss[args.mark]:.1f} MB, at edit {args.edits}: {rss[args.edits]:.1f} MB"
        f" ({100 * growth:+.1f}%; target <= {100 * RSS_GROWTH_LIMIT:.0f}%)"
        f"{'' if args.tracemalloc else '  ' + verdict(growth <= RSS_GROWTH_LIMIT)}"
    )
    print(
        f"didChange->publish p50 {p50:.1f} ms, p95 {p95:.1f} ms (target p95 <= {P95_LIMIT_MS:.0f} ms)"
        f"{'' if args.tracemalloc else '  ' + verdict(p95 <= P95_LIMIT_MS)}"
    )
    print(
        f"diagnostics at the end: {len(result['served'])}, a fresh `jax-lsp check`: "
        f"{len(result['checked'])}  {verdict(same)}"
    )
    if not same:
        print(f"  served:  {result['served']}\n  checked: {result['checked']}")
    failed = not same or (not args.tracemalloc and (growth > RSS_GROWTH_LIMIT or p95 > P95_LIMIT_MS))
    return 1 if failed else 0


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


if __name__ == "__main__":
    raise SystemExit(main())
