"""Chosen corpus files, each checked alone in this process with a fresh Workspace, exactly as
bench_real's "each file checked alone" section times them (its check_one), without measuring
whole projects first. For following the slowest files from one change to the next: run it for
two checkouts in turn (A/B) on a shared machine, and compare the medians.

Files are named PROJECT:PATH (PATH relative to the project's source root, as bench_real prints
it); by default, the slowest files bench_real reported for issue 8. One check of a small file
comes first, so that no timed file pays for imports.

    python benchmarks/bench_files.py [--repeat 3] [--cache-dir DIR] [PROJECT:PATH ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from bench_real import check_one
from corpus import DEFAULT_CACHE, PROJECTS, fetch

SLOWEST = (
    "maxtext:maxtext/layers/nnx_decoders.py",
    "maxtext:maxtext/layers/pipeline.py",
    "jax:jax/_src/ad_checkpoint.py",
    "praxis:praxis/layers/checkpoint_policy.py",
    "jax:jax/_src/lax/lax.py",
)
WARM_UP = "jax:jax/_src/ad_checkpoint.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=SLOWEST, metavar="PROJECT:PATH")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    by_name = {project.name: project for project in PROJECTS}
    named = [tuple(name.split(":", 1)) for name in [WARM_UP, *args.files]]
    unknown = sorted({project for project, _ in named} - set(by_name))
    if unknown:
        parser.error(f"unknown projects: {', '.join(unknown)}")
    roots = {project: fetch(by_name[project], args.cache_dir)[0] for project, _ in named}
    import jedi  # noqa: F401 - its import is no file's cost

    check_one(roots[named[0][0]], roots[named[0][0]] / named[0][1])
    failed = False
    for project, path in named[1:]:
        root = roots[project]
        runs = [check_one(root, root / path) for _ in range(args.repeat)]
        seconds = [run[0] for run in runs]
        error = next((run[2] for run in runs if run[2]), None)
        failed = failed or error is not None
        print(
            f"{statistics.median(seconds) * 1000:8.1f} ms  (runs: {', '.join(f'{s * 1000:.0f}' for s in seconds)})"
            f"  {runs[0][1]:>3} sites  [{project}] {path}" + (f"  error: {error}" if error else ""),
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
