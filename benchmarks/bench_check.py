"""Speed of `jax-lsp check` against a parse-only baseline, on generated trees.

Two scenarios: a tree where a few percent of the modules hold policies (target: check at most
1.0x the time it takes to `ast.parse` every file), and one where every module does (target:
at most 2x). Both are run as subprocesses from a cold interpreter, alternating, and the medians
are compared. The check must report exactly the mistakes the generator planted, or this fails.

    python benchmarks/bench_check.py [--repeat 5] [--modules 2000] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_tree import generate

BASELINE = """
import ast, os, sys
for folder, dirs, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".py"):
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                ast.parse(handle.read(), path)
"""

SCENARIOS = (
    ("few policies", False, 1.0),
    ("every file has a policy", True, 2.0),
)


def _timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def _check_command() -> list[str]:
    return [sys.executable, "-m", "jax_lsp", "check", ".", "--output-format", "json"]


def verify(tree: Path, manifest: dict, done: subprocess.CompletedProcess) -> None:
    """Exactly the planted mistakes, no more, no fewer; exit code 1 (findings remain)."""
    if done.returncode != 1:
        sys.exit(f"check exited {done.returncode}, expected 1:\n{done.stderr}")
    found = Counter((f["path"], f["line"], f["code"]) for f in json.loads(done.stdout))
    expected = Counter(tuple(e) for e in manifest["expected"])
    missing, unexpected = expected - found, found - expected
    if missing or unexpected:
        lines = [f"  missing   {p}:{l} {c}" for p, l, c in sorted(missing.elements())]
        lines += [f"  unexpected {p}:{l} {c}" for p, l, c in sorted(unexpected.elements())]
        sys.exit(f"{tree}: the check did not find exactly the planted mistakes:\n" + "\n".join(lines))


def run_scenario(tree: Path, manifest: dict, repeat: int) -> tuple[float, float]:
    baseline_cmd = [sys.executable, "-c", BASELINE, "."]
    check_cmd = _check_command()
    _timed(baseline_cmd, tree)  # warm the page cache for both
    _, first = _timed(check_cmd, tree)
    verify(tree, manifest, first)
    baseline, check = [], []
    for _ in range(repeat):
        seconds, done = _timed(baseline_cmd, tree)
        if done.returncode != 0:
            sys.exit(f"baseline failed:\n{done.stderr}")
        baseline.append(seconds)
        seconds, done = _timed(check_cmd, tree)
        verify(tree, manifest, done)
        check.append(seconds)
    return statistics.median(baseline), statistics.median(check)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modules", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    failed = []
    print(
        f"{'scenario':<26}{'modules':>8}{'lines':>9}{'planted':>8}{'parse':>9}{'check':>9}{'ratio':>7}  target"
    )
    for name, every_file, target in SCENARIOS:
        tree = args.out / ("tree_every_file" if every_file else "tree_few")
        manifest = generate(tree, args.modules, args.lines, 0.03, every_file, seed=0)
        baseline, check = run_scenario(tree, manifest, args.repeat)
        ratio = check / baseline
        print(
            f"{name:<26}{manifest['modules']:>8}{manifest['lines']:>9}{len(manifest['expected']):>8}"
            f"{baseline:>8.2f}s{check:>8.2f}s{ratio:>6.2f}x  <= {target:.1f}x {'ok' if ratio <= target else 'MISSED'}"
        )
        if ratio > target:
            failed.append(name)
    print(f"medians of {args.repeat} runs each; planted mistakes all found, nothing else reported")
    if failed:
        sys.exit(f"speed target missed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
