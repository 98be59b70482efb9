"""The advisor's peak estimate against the compiled step, per model and candidate.

    python benchmarks/bench_peak.py [--only NAME] [--models] [--cache DIR] [--python PY]

For every advise site of the repository's advisor fixtures (tests/fixtures/advisor) and, with
--models, of the public repositories of benchmarks/advise_models.py (their cache folder and
interpreter as that script says), runs

    jax-lsp advise SITE --example SPEC --compile --output-format json

(a new agent: the timings are cold) and prints, per candidate that keeps everything on the
device, the estimated peak (`peak_bytes`), the compiled temporaries (`compiled.temp_bytes`,
XLA's memory_analysis() of the same jit(grad)), the estimate's error and the compile time;
per model, the largest error and the ordering agreement: of the pairs of candidates whose
compiled temporaries differ by more than 5% (closer ones are ties), the share that the
estimate orders the same way. Offloading candidates are listed apart: a CPU's compiled step
does not see offloading, so they are not compared.

A model is "scanned" when a residual of its current policy is stacked by a scan; the target
(issue 25) is an error within 30% and the same ordering on scanned models of at least 8 MiB.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
FIXTURES = CHECKOUT / "tests" / "fixtures" / "advisor"
MIB = 2**20
TIE = 0.05  # compiled figures closer than this are a tie for the ordering


@dataclass(frozen=True)
class Case:
    name: str
    root: Path  # the folder advise runs from
    site: str  # PATH:LINE, relative to root
    example: str
    python: str


def _site(path: Path, needle: str = "policy=") -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(
        i for i, text in enumerate(lines, 1) if needle in text and not text.lstrip().startswith(("#", "`"))
    )
    return f"{path.name}:{line}"


FIXTURE_SITES = (  # name, file, a text on the site's line, example function
    ("mlp", "mlp.py", "block = ", "example"),
    ("matmul_stack", "matmul_stack.py", "block = ", "example"),
    ("matmul_scanned", "matmul_stack.py", "lax.scan(", "scanned_example"),
    ("conv", "matmul_stack.py", "conv_block = ", "conv_example"),
    ("scan_stack", "scan_stack.py", "policy=", "example"),
    ("peak_stack", "peak_stack.py", "policy=", "example"),
    ("gelu_stack", "gelu_stack.py", "policy=", "example"),
    ("linen_block", "linen_block.py", "policy=", "example"),
    ("llama_block", "llama_block.py", "policy=", "example"),
    ("nnx_block", "nnx_block.py", "policy=", "example"),
    ("eqx_block", "eqx_block.py", "policy=", "example"),
)


# The LLaMA-style fixture at a larger shape (8 layers, batch 8, sequence 256): its example only.
LARGE_LLAMA = """
import jax
from llama_block import DTYPE, Model


def example():
    model = Model(layers=8)
    x = jax.ShapeDtypeStruct((8, 256, 32), DTYPE)
    params = jax.eval_shape(model.init, jax.random.key(0), x)
    return {"fn": model.apply, "args": (params, x)}
"""


def fixture_cases(folder: Path) -> list[Case]:
    """The fixtures' sites, and the LLaMA-style one at a larger shape (its example in ``folder``)."""
    (folder / "llama_large.py").write_text(LARGE_LLAMA, encoding="utf-8")
    large = (
        "llama_block_large",
        FIXTURES / "llama_block.py",
        "policy=",
        f"{folder / 'llama_large.py'}:example",
    )
    cases = [
        (name, FIXTURES / file, needle, f"{file}:{function}")
        for name, file, needle, function in FIXTURE_SITES
    ]
    return [
        Case(name, FIXTURES, _site(path, needle), example, sys.executable)
        for name, path, needle, example in (*cases, large)
    ]


def model_cases(cache: Path, python: str | None) -> list[Case]:
    sys.path.insert(0, str(HERE))
    from advise_models import EXAMPLE_COPY, EXAMPLES, REPOSITORIES

    found = []
    for repo in REPOSITORIES:
        folder = repo.folder(cache)
        if not folder.is_dir():
            print(f"{repo.name}: not in {cache} (see benchmarks/advise_models.py): skipped")
            continue
        (folder / EXAMPLE_COPY).write_text((EXAMPLES / f"{repo.name}.py").read_text(encoding="utf-8"))
        interpreter = python or str(cache / "venv" / "bin" / "python")
        for function in repo.examples:
            found.append(
                Case(f"{repo.name}:{function}", folder, repo.site, f"{EXAMPLE_COPY}:{function}", interpreter)
            )
    return found


def advise(case: Case) -> tuple[dict, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CHECKOUT), env.get("PYTHONPATH")) if p)
    command = [case.python, "-m", "jax_lsp", "advise", case.site, "--example", case.example]
    command += ["--compile", "--output-format", "json", "--timeout", "1200", "--memory-limit-mb", "60000"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=case.root, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    try:
        return json.loads(done.stdout), seconds
    except json.JSONDecodeError:
        return {"error": {"status": "crashed", "message": done.stderr[-500:]}, "policies": []}, seconds


def agreement(entries: list[dict]) -> tuple[int, int]:
    """(pairs ordered alike, pairs compared): pairs whose compiled figures are not a tie."""
    alike = compared = 0
    for a, b in itertools.combinations(entries, 2):
        ta, tb = a["compiled"]["temp_bytes"], b["compiled"]["temp_bytes"]
        if abs(ta - tb) <= TIE * max(ta, tb):
            continue
        compared += 1
        alike += (a["peak_bytes"] - b["peak_bytes"]) * (ta - tb) > 0
    return alike, compared


def _size(count: int) -> str:
    return f"{count / MIB:9.2f} MiB" if count >= MIB else f"{count / 1024:9.1f} KiB"


def candidate_lines(policies: list[dict]) -> list[str]:
    """Per candidate of an advise --compile answer: its estimate, compiled temporaries, error
    and compile time, or why it has none."""
    lines = []
    for p in policies:
        short = p["policy"].removeprefix("jax.checkpoint_policies.")
        short = short if len(short) <= 56 else short[:53] + "..."
        if p.get("compiled") is None:
            lines.append(f"   {short:<56} {p.get('compile_error') or p.get('error') or 'not compiled'}"[:160])
            continue
        apart = " (offloads: not compared)" if p["host_bytes"] else ""
        error = p["estimate_error"]
        lines.append(
            f"   {short:<56} est {_size(p['peak_bytes'])}  compiled {_size(p['compiled']['temp_bytes'])}"
            f"  error {'' if error is None else f'{error:+.0%}':>6}  compile {p['compile_s']:.2f} s{apart}"
        )
    return lines


def report(case: Case, data: dict, seconds: float) -> dict | None:
    print(f"\n== {case.name} ({case.site}, example {case.example}; advise --compile {seconds:.1f} s)")
    if data.get("error"):
        print(f"   not advised: {data['error']['status']}: {data['error']['message'][:200]}")
        return None
    compiled = [p for p in data["policies"] if p.get("compiled") and p.get("peak_bytes") is not None]
    on_device = [p for p in compiled if not p["host_bytes"]]
    for line in candidate_lines(data["policies"]):
        print(line)
    if not on_device:
        return None
    current = next((p for p in data["policies"] if p["current"]), {})
    scanned = any(r["iterations"] for r in current.get("residuals", ()))
    alike, compared = agreement(on_device)
    worst = max(abs(p["estimate_error"] or 0) for p in on_device)
    smallest = min(p["compiled"]["temp_bytes"] for p in on_device)
    row = {
        "name": case.name,
        "scanned": scanned,
        "smallest_mib": smallest / MIB,
        "worst_error": worst,
        "median_error": statistics.median(p["estimate_error"] or 0 for p in on_device),
        "alike": alike,
        "compared": compared,
        "compile_s": statistics.median(p["compile_s"] for p in compiled),
    }
    print(
        f"   largest |error| {worst:.0%}, median error {row['median_error']:+.0%}; ordering: {alike}/{compared} "
        f"pairs alike; median compile {row['compile_s']:.2f} s per candidate"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cases whose name contains this")
    parser.add_argument("--models", action="store_true", help="also the public repositories")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "jax-lsp-corpus" / "models")
    parser.add_argument("--python", help="the public repositories' interpreter (default: the cache's venv)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cases = fixture_cases(Path(folder)) + (model_cases(args.cache, args.python) if args.models else [])
        for case in cases:
            if args.only and args.only not in case.name:
                continue
            row = report(case, *advise(case))
            if row is not None:
                rows.append(row)
    print(
        "\nmodel                         scanned  smallest compiled  largest |error|  median error  ordering  compile/cand."
    )
    for r in rows:
        target = r["scanned"] and r["smallest_mib"] >= 8
        mark = (
            ("  ok" if r["worst_error"] <= 0.3 and r["alike"] == r["compared"] else "  MISSED")
            if target
            else ""
        )
        print(
            f"{r['name']:<30} {'yes' if r['scanned'] else 'no':>7}  {r['smallest_mib']:>13.2f} MiB  {r['worst_error']:>15.0%}"
            f"  {r['median_error']:>+12.0%}  {r['alike']:>3}/{r['compared']:<4}  {r['compile_s']:>10.2f} s{mark}"
        )


if __name__ == "__main__":
    main()
