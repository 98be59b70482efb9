"""Real JAX projects as the yardstick for `jax-lsp check` and `jax-lsp serve`.

The corpus is the pinned released sources listed in benchmarks/corpus.py, downloaded once into
--cache-dir, and the jax repository's own tree at a pinned release (corpus.JAX_REPO: read from a
local folder, skipped with a printed line where it is missing; --jax-repo DIR names another).
CPython's standard library (corpus.CPYTHON_LIB: this Python's, copied into the cache) is measured
beside the corpus, not in its totals. Per project it prints the files, internal errors, syntax
errors (JAX001), findings by code, and the time of `jax-lsp check` beside three baselines
measured in the same run: `ast.parse` of every .py file, `ruff check` with its default rules, and
`ruff check --select RET503` (one rule: the lightest pass of the peer). Each command is a
subprocess from a cold interpreter, the four alternate, and the medians of --repeat runs (of
at least SMALL_REPO_RUNS on a small repository) are compared: the whole corpus in at most
CORPUS_RET503_LIMIT_X times ruff's RET503, each repository in PROJECT_RET503_LIMIT_X, and every
cold run of a repository of fewer than SMALL_REPO_FILES files in SMALL_REPO_LIMIT_S. Then:
- every file checked on its own in this process, with a fresh Workspace each (as when a file
  is opened): the slowest ten, timed again --repeat times;
- a re-run with nothing changed, when `jax-lsp check` keeps a result cache (--no-cache);
- one named file of the largest project, and ONE_FILES: one changed file of each of the
  repositories of jax, axlearn and maxtext, checked from the repository's root as pre-commit
  checks it (medians of at least ONE_FILE_RUNS runs, alternated with ruff's);
- the language server (bench_server's client) on the largest module that holds policy sites,
  opened in a copy of its project: first diagnostics, then edits typed from the moment those
  arrive (no settling time). That is a user who opens a file and types at once: the workspace
  index, and jedi where the module leaves callees to it, are still running, and the server must
  answer each keystroke first. Keystrokes follow each other without a pause, so the index
  (which waits for 0.2 s without a check) hardly runs meanwhile; a keystroke after a pause may
  wait for the one file the index is on. bench_server --settle 3 measures the steady state;
- every finding with its source line, to sort real mistakes from false alarms.

`jax-lsp check` runs as `pip install .` leaves it: this checkout installed (byte-compiled) into a
venv of its own under benchmarks/out/, run through its `jax-lsp` script. That venv sees this
interpreter's site-packages for the dependencies, with its `.pth` files but not the editable
install's finder, which a developer's checkout loads at every start-up and a user's install never
does. The in-process and server measures run this checkout's code, byte-compiled.

ruff runs as `ruff check --no-cache --isolated --config "include=['*.py']"`, with its default
rules (E4, E7, E9, F): they are what `ruff check` does for a user who configured nothing; and
again with `--select RET503`.
--isolated keeps the projects' own ruff settings (other rules and excludes in each) from
changing the work measured; `include` limits it to .py files, as jax-lsp (by default ruff
also reads notebooks and stubs).

Each target is printed as a ratio or a time with PASS or FAIL; the exit status is 1 if any
fails. Output meant to be kept goes to benchmarks/out/ (ignored by git and by jax-lsp).

    python benchmarks/bench_real.py [--projects jax,flax,jax-repo,cpython-lib] [--repeat 3]
                                    [--no-server] [--json benchmarks/out/real.json]
                                    [--cache-dir DIR] [--jax-repo DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
sys.path[:0] = [str(REPO), str(BENCHMARKS)]  # this checkout's jax_lsp, and the sibling modules

from bench_server import JAX_LSP, change_latency, first_diagnostics, percentile
from corpus import (
    AXLEARN_REPO,
    CPYTHON_LIB,
    DEFAULT_CACHE,
    GITHUB,
    JAX_REPO,
    LOCAL,
    MAXTEXT_REPO,
    PROJECTS,
    LocalProject,
    Project,
    fetch,
    local_root,
)

RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
INSTALLED = BENCHMARKS / "out" / "installed"  # the venv `jax-lsp check` runs from
# Without this checkout on PYTHONPATH (set below for the server): the installed copy is imported.
INSTALL_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
# The server and the in-process measures run this checkout's code (check runs INSTALLED's copy).
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

# Parse every .py file under a folder; a file Python cannot parse is counted, as far as it went.
PARSE_ALL = """
import ast, os, sys
files = failed = 0
for folder, dirs, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".py"):
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                data = handle.read()
            files += 1
            try:
                ast.parse(data, path)
            except (SyntaxError, ValueError):
                failed += 1
print(files, failed)
"""

SLOWEST = 10
SERVER_EDITS = 100
SERVER_SETTLE_S = 0.0  # the first edit follows the first diagnostics at once (see the docstring)
SERVER_WARM_RUNS = 5
# A check of one file takes ~0.15 s and ruff's ~15 ms: a few runs of each, alternated, say less
# than the VM's noise. Their ratio is taken from medians of this many runs at least.
ONE_FILE_RUNS = 11
# One changed file of each of three repositories (what pre-commit checks): the repository
# (corpus.JAX_REPO, AXLEARN_REPO, MAXTEXT_REPO) and the file; and the rule of the lightest ruff
# baseline. axlearn's `utils.py` is imported by most of its tree: the search for the files that
# could use its policies finds the most there.
JAX_REPO_FILE = "jax/_src/dtypes.py"
ONE_FILES = (
    (JAX_REPO, JAX_REPO_FILE),
    (AXLEARN_REPO, "axlearn/common/utils.py"),
    (MAXTEXT_REPO, "src/maxtext/layers/decoders.py"),
)
ONE_FILE_LIMIT_S = 0.3
ONE_FILE_LIMIT_X = 10.0  # or this many times ruff's time on the file
RET503 = "RET503"
# Every cold run of a repository of fewer .py files than this is at most this long; no project or
# repository takes more than this many times `ruff --select RET503`, and the whole corpus no more
# than that many.
SMALL_REPO_FILES = 150
SMALL_REPO_LIMIT_S = 1.0
PROJECT_RET503_LIMIT_X = 5.0
CORPUS_RET503_LIMIT_X = 2.0
# A small repository's check takes ~30 ms, mostly the interpreter's start-up, and ruff's ~8:
# a median of 3 runs of each moves by a tenth from run to run; of this many, far less.
SMALL_REPO_RUNS = 11


@dataclass
class Timing:
    parse: list[float] = field(default_factory=list)
    ruff: list[float] = field(default_factory=list)
    ret503: list[float] = field(default_factory=list)  # ruff check --select RET503
    check: list[float] = field(default_factory=list)
    check_warm: list[float] = field(default_factory=list)

    def median(self, name: str) -> float:
        values = getattr(self, name)
        return statistics.median(values) if values else float("nan")


@dataclass
class FileTime:
    project: str
    path: str
    lines: int
    seconds: float
    sites: int
    error: str | None = None


@dataclass
class ProjectResult:
    name: str
    version: str
    kind: str
    root: str
    files: int = 0  # the files jax-lsp checks
    py_files: int = 0  # every .py file under the root, as the parse baseline reads
    unparsable: int = 0  # of those, files Python cannot parse (newer syntax, broken on purpose)
    py_bytes: int = 0
    exit_code: int = 0
    sites: int = 0  # policy sites found, file by file in-process
    files_with_sites: int = 0
    internal_errors: list[str] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    timing: Timing = field(default_factory=Timing)


# Commands --------------------------------------------------------------------------------
def check_command(target: Path, no_cache: bool) -> list[str]:
    return [
        str(INSTALLED / "bin" / "jax-lsp"),
        "check",
        str(target),
        "--output-format",
        "json",
        *(["--no-cache"] if no_cache else []),
    ]


def ruff_command(target: Path, select: str | None = None) -> list[str]:
    return [
        RUFF,
        "check",
        "--no-cache",
        "--isolated",
        "--config",
        "include=['*.py']",
        *(["--select", select] if select else []),
        "--exit-zero",
        "--output-format",
        "concise",
        str(target),
    ]


def parse_command(target: Path) -> list[str]:
    return [sys.executable, "-c", PARSE_ALL, str(target)]


def compile_jax_lsp() -> None:
    """Byte-compile this checkout's jax_lsp, as `pip install` does for an installed package."""
    import compileall

    compileall.compile_dir(REPO / "jax_lsp", quiet=1)


def install_jax_lsp() -> None:
    """Install this checkout into INSTALLED (a venv seeing this interpreter's site-packages
    through a `.pth`, and its other `.pth` files but the editable install's)."""
    import sysconfig
    import venv

    if INSTALLED.exists():
        shutil.rmtree(INSTALLED)
    venv.create(INSTALLED, with_pip=False)
    python = INSTALLED / "bin" / "python"
    done = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    site_packages, ours = Path(done.stdout.strip()), Path(sysconfig.get_paths()["purelib"])
    (site_packages / "_bench_dependencies.pth").write_text(f"{ours}\n", encoding="utf-8")
    for pth in ours.glob("*.pth"):
        if not pth.name.startswith("__editable__"):
            shutil.copy(pth, site_packages)
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps"]
    subprocess.run([*pip, str(REPO)], check=True, env=INSTALL_ENV)


def timed(command: list[str], cwd: Path = REPO) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, env=INSTALL_ENV)
    return time.perf_counter() - started, done


def cache_supported() -> bool:
    done = subprocess.run(
        check_command(REPO, no_cache=False)[:2] + ["--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env=INSTALL_ENV,
    )
    return "--no-cache" in done.stdout


def internal_errors(stderr: str) -> list[str]:
    return [line.removeprefix("jax-lsp: error: ") for line in stderr.splitlines() if "internal error" in line]


def read_findings(done: subprocess.CompletedProcess, root: Path) -> list[dict]:
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError:
        sys.exit(f"jax-lsp check printed no JSON on {root}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    for finding in found:
        finding["path"] = os.path.relpath(finding["path"], root)
        finding.pop("fixes", None)
    return found


# The whole-project runs -------------------------------------------------------------------
def measure_project(
    project: Project | LocalProject, root: Path, kind: str, repeat: int, cache: bool
) -> ProjectResult:
    from jax_lsp.engine.files import discover

    files = discover([root])
    result = ProjectResult(project.name, project.version, kind, str(root), files=len(files))
    result.py_bytes = sum(path.stat().st_size for path in files)
    _, done = timed(parse_command(root))  # also warms the page cache for the others
    result.py_files, result.unparsable = map(int, done.stdout.split())
    timed(ruff_command(root))
    _, first = timed(check_command(root, no_cache=cache))
    result.exit_code = first.returncode
    result.internal_errors = internal_errors(first.stderr)
    result.findings = read_findings(first, root)
    for _ in range(repeat):
        for name, command in (
            ("parse", parse_command(root)),
            ("ruff", ruff_command(root)),
            ("ret503", ruff_command(root, RET503)),
            ("check", check_command(root, cache)),
        ):
            seconds, done = timed(command)
            if name == "check" and done.returncode != first.returncode:
                sys.exit(
                    f"{project.name}: jax-lsp check exited {done.returncode}, first {first.returncode}:\n{done.stderr[-2000:]}"
                )
            getattr(result.timing, name).append(seconds)
    if cache:  # a second run on the cache the first one left, nothing changed
        timed(check_command(root, no_cache=False))
        for _ in range(repeat):
            result.timing.check_warm.append(timed(check_command(root, no_cache=False))[0])
    return result


# Each file on its own, in this process ---------------------------------------------------
def check_one(root: Path, path: Path) -> tuple[float, int, str | None]:
    """Seconds to check `path` in a fresh Workspace, its policy sites, and any exception."""
    from jax_lsp.engine import Workspace

    gc.collect()  # the garbage of the file before (workspaces hold cycles) is not this file's cost
    workspace = Workspace(roots=[root])
    started = time.perf_counter()
    try:
        workspace.check_file(path)
    except Exception as exc:  # noqa: BLE001 - reported, with where it happened
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return (
            time.perf_counter() - started,
            0,
            f"{type(exc).__name__}: {exc} (at {frame.filename}:{frame.lineno})",
        )
    seconds = time.perf_counter() - started
    errors = [str(error) for error in workspace.take_internal_errors()]
    module = workspace.load(path, only_if_site=True)
    sites = len(workspace.sites(module)) if module is not None else 0
    return seconds, sites, "; ".join(errors) or None


def time_each_file(results: list[ProjectResult], repeat: int) -> list[FileTime]:
    import jedi  # noqa: F401 - its import is no file's cost

    from jax_lsp.engine.files import discover

    times = []
    for result in results:
        root = Path(result.root)
        for path in discover([root]):
            seconds, sites, error = check_one(root, path)
            lines = path.read_bytes().count(b"\n")
            times.append(FileTime(result.name, os.path.relpath(path, root), lines, seconds, sites, error))
    roots = {result.name: Path(result.root) for result in results}
    for slow in sorted(times, key=lambda t: -t.seconds)[:SLOWEST]:
        root = roots[slow.project]
        slow.seconds = statistics.median(check_one(root, root / slow.path)[0] for _ in range(repeat))
    return times


# One named file, from the command line ---------------------------------------------------
def measure_one_file(root: Path, path: Path, repeat: int, cache: bool) -> dict:
    """`path`, relative to `root` or absolute, checked from `root` (as pre-commit runs a hook from
    the repository's root, naming the changed files)."""
    cli, ruff, ret503 = [], [], []
    timed(ruff_command(path), root)
    for _ in range(max(repeat, ONE_FILE_RUNS)):
        cli.append(timed(check_command(path, no_cache=cache), root)[0])
        ruff.append(timed(ruff_command(path), root)[0])
        ret503.append(timed(ruff_command(path, RET503), root)[0])
    return {
        "path": os.path.relpath(root / path, root),
        "check_s": statistics.median(cli),
        "ruff_s": statistics.median(ruff),
        "ret503_s": statistics.median(ret503),
    }


# The language server ---------------------------------------------------------------------
def parse_seconds(text: str, runs: int = 20) -> float:
    import ast

    values = []
    for _ in range(runs):
        started = time.perf_counter()
        ast.parse(text)
        values.append(time.perf_counter() - started)
    return statistics.median(values)


def measure_server(root: Path, path: Path, repeat: int) -> dict:
    """bench_server's measures, with the module opened as a new file beside the original in a
    copy of its project (the server may resolve the module's imports there)."""
    text = path.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="bench-real-") as temporary:
        copy = Path(temporary) / root.name
        shutil.copytree(root, copy)
        folder = copy / path.relative_to(root).parent
        spawn, cold, warm, found = asyncio.run(
            first_diagnostics(JAX_LSP, copy, text, repeat, SERVER_WARM_RUNS, folder)
        )
        changes = asyncio.run(
            change_latency(JAX_LSP, copy, text, SERVER_EDITS, SERVER_SETTLE_S, folder=folder)
        )
    return {
        "path": os.path.relpath(path, root),
        "lines": text.count("\n"),
        "diagnostics": found,
        "parse_ms": 1000 * parse_seconds(text),
        "spawn_ms": 1000 * statistics.median(spawn),
        "cold_ms": 1000 * statistics.median(cold),
        "warm_ms": 1000 * statistics.median(warm),
        "change_p50_ms": 1000 * percentile(changes, 0.5),
        "change_p95_ms": 1000 * percentile(changes, 0.95),
    }


# Report ----------------------------------------------------------------------------------
def machine() -> str:
    model = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor() or "unknown CPU",
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )
    ruff = subprocess.run([RUFF, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        f"{os.cpu_count()} cores, {model}; Python {platform.python_version()}; {ruff}; "
        f"jax-lsp at {commit or 'unknown commit'}"
    )


def verdict(value: float, limit: float) -> str:
    return "PASS" if value <= limit else "FAIL"


def print_projects(results: list[ProjectResult], cache: bool) -> None:
    print(
        f"{'project':<18}{'version':<26}{'from':<6}{'files':>6}{'.py':>6}{'bad':>4}{'MB':>6}{'sites':>6}{'in':>4}"
        f"{'intl':>5}{'JAX001':>7}{'parse':>8}{'ruff':>8}{'RET503':>8}{'check':>8}{'/parse':>7}{'/ruff':>7}"
        f"{'/RET':>7}{'warm':>8}  findings by code"
    )
    for r in results:
        codes = Counter(f["code"] for f in r.findings)
        warm = f"{r.timing.median('check_warm'):7.2f}s" if cache else f"{'-':>8}"
        by_code = ", ".join(f"{code} {n}" for code, n in sorted(codes.items())) or "-"
        print(
            f"{r.name:<18}{r.version:<26}{r.kind:<6}{r.files:>6}{r.py_files:>6}{r.unparsable:>4}"
            f"{r.py_bytes / 1e6:6.1f}{r.sites:>6}{r.files_with_sites:>4}{len(r.internal_errors):>5}{codes.get('JAX001', 0):>7}"
            f"{r.timing.median('parse'):7.2f}s{r.timing.median('ruff'):7.2f}s{r.timing.median('ret503'):7.2f}s"
            f"{r.timing.median('check'):7.2f}s"
            f"{r.timing.median('check') / r.timing.median('parse'):6.2f}x{r.timing.median('check') / r.timing.median('ruff'):6.2f}x"
            f"{r.timing.median('check') / r.timing.median('ret503'):6.2f}x{warm}  {by_code}"
        )
    print(
        "files: what jax-lsp checks; .py: every .py file the parse baseline reads; bad: of those, files this "
        "Python cannot parse; sites: policy sites found, in how many files; intl: internal errors; "
        "ruff: default rules; RET503: `--select RET503`; times: medians"
    )


def print_findings(results: list[ProjectResult]) -> None:
    from jax_lsp.core.text.decoding import decode, split_lines

    print("\nEvery internal error, JAX001 and finding (file:line code message, then the source line):")
    if not any(r.internal_errors or r.findings for r in results):
        print("  (none)")
    for r in results:
        for error in r.internal_errors:
            print(f"  [{r.name}] INTERNAL {error}")
        for f in r.findings:
            try:
                lines = split_lines(decode((Path(r.root) / f["path"]).read_bytes())[0])
                source = lines[f["line"] - 1].strip() if 0 < f["line"] <= len(lines) else ""
            except OSError:
                source = "?"
            print(
                f"  [{r.name}] {f['path']}:{f['line']}:{f['column']} {f['code']} {f['message']}\n      | {source}"
            )


def main() -> int:
    every = [*PROJECTS, *LOCAL, *GITHUB]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--projects", help="comma-separated names (default: all): " + ",".join(p.name for p in every)
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-server", action="store_true", help="skip the language server measures")
    parser.add_argument(
        "--no-each-file",
        action="store_true",
        help="skip checking every file alone in-process (no sites column)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every figure and finding here")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"downloads and sources (default {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--jax-repo",
        type=Path,
        metavar="DIR",
        help=f"the jax repository's tree (default: {JAX_REPO.folder} below the cache's src/)",
    )
    args = parser.parse_args()
    wanted = set(args.projects.split(",")) if args.projects else {p.name for p in every}
    unknown = wanted - {p.name for p in every}
    if unknown:
        parser.error(f"unknown projects: {', '.join(sorted(unknown))}")
    compile_jax_lsp()
    install_jax_lsp()
    cache = cache_supported()
    print(f"machine: {machine()}")
    print(
        f"medians of {args.repeat} runs; result cache: {'cold runs use --no-cache' if cache else 'not supported yet'}\n"
    )

    results = []  # the corpus: its totals are the targets
    for project in (p for p in PROJECTS if p.name in wanted):
        root, kind = fetch(project, args.cache_dir)
        print(f"  {project.name} {project.version} ({kind}) ...", file=sys.stderr, flush=True)
        results.append(measure_project(project, root, kind, args.repeat, cache))
    jax_repo = None
    if JAX_REPO.name in wanted:
        jax_root = local_root(JAX_REPO, args.cache_dir, args.jax_repo)
        if jax_root is None:
            print(
                f"jax-repo: skipped, no folder {args.jax_repo or args.cache_dir / 'src' / JAX_REPO.folder} ({JAX_REPO.how})"
            )
        else:
            print(f"  {JAX_REPO.name} {JAX_REPO.version} ...", file=sys.stderr, flush=True)
            jax_repo = measure_project(JAX_REPO, jax_root, "git", args.repeat, cache)
            results.append(jax_repo)
    small = []  # the GITHUB repositories, in the corpus
    for project in (p for p in GITHUB if p.name in wanted):
        small_root = local_root(project, args.cache_dir)
        if small_root is None:
            print(
                f"{project.name}: skipped, no folder {args.cache_dir / 'src' / project.folder} ({project.how})"
            )
            continue
        print(f"  {project.name} {project.version[:12]} ...", file=sys.stderr, flush=True)
        small.append(measure_project(project, small_root, "git", max(args.repeat, SMALL_REPO_RUNS), cache))
    results += small
    lib = None
    if CPYTHON_LIB.name in wanted:
        lib_root = local_root(CPYTHON_LIB, args.cache_dir)
        assert lib_root is not None  # made from this Python's own
        print(f"  {CPYTHON_LIB.name} {CPYTHON_LIB.version} ...", file=sys.stderr, flush=True)
        lib = measure_project(CPYTHON_LIB, lib_root, "local", args.repeat, cache)
    times = [] if args.no_each_file else time_each_file(results, args.repeat)
    for r in results:
        r.sites = sum(t.sites for t in times if t.project == r.name)
        r.files_with_sites = sum(1 for t in times if t.project == r.name and t.sites)
    print_projects([*results, *([lib] if lib else [])], cache)
    if lib:
        print(
            f"{CPYTHON_LIB.name}: the standard library of {CPYTHON_LIB.version} ({sys.executable}), beside the corpus"
        )

    print(
        f"\nEach file checked alone, in-process (fresh Workspace): the {SLOWEST} slowest (median of {args.repeat})"
    )
    slowest = sorted(times, key=lambda t: -t.seconds)[:SLOWEST]
    for t in slowest:
        print(f"  {t.seconds * 1000:8.1f} ms  {t.lines:>6} lines  {t.sites:>3} sites  [{t.project}] {t.path}")
    file_errors = [t for t in times if t.error]
    for t in file_errors:
        print(f"  in-process error [{t.project}] {t.path}: {t.error}")

    released = [r for r in results if r is not jax_repo]
    largest = max(released or results, key=lambda r: r.py_bytes) if results else None
    with_sites = [t for t in times if t.sites and largest and t.project == largest.name]
    one_file = None
    if with_sites and largest:
        chosen = max(with_sites, key=lambda t: (t.sites, t.lines))
        one_file = measure_one_file(Path(largest.root), Path(largest.root) / chosen.path, args.repeat, cache)
        print(
            f"\nOne named file of the largest project ({largest.name}): {one_file['path']} "
            f"({chosen.lines} lines, {chosen.sites} sites): check {one_file['check_s']:.2f}s, ruff {one_file['ruff_s']:.3f}s "
            f"(from the command line, as pre-commit runs it; medians of {max(args.repeat, ONE_FILE_RUNS)} runs)"
        )
    one_files = []  # (repository, measures) of ONE_FILES
    for repository, relative in ONE_FILES:
        name = repository.name
        folder = args.jax_repo if repository is JAX_REPO else None
        root = local_root(repository, args.cache_dir, folder) if name in wanted else None
        if root is None or not (root / relative).is_file():
            print(f"One changed file: [{name}] {relative}: skipped, not in this run ({repository.how})")
            continue
        measured = measure_one_file(root, Path(relative), args.repeat, cache)
        one_files.append((name, measured))
        print(
            f"One changed file: [{name}] {relative}: check {measured['check_s']:.2f}s, "
            f"ruff {measured['ruff_s']:.3f}s, ruff --select RET503 {measured['ret503_s']:.3f}s "
            f"(medians of {max(args.repeat, ONE_FILE_RUNS)} runs)"
        )

    server = None
    modules_with_sites = [t for t in times if t.sites and not t.error]
    if not args.no_server and modules_with_sites:
        biggest = max(modules_with_sites, key=lambda t: t.lines)
        root = next(Path(r.root) for r in results if r.name == biggest.project)
        server = measure_server(root, root / biggest.path, args.repeat)
        print(
            f"\nServer on the largest module with policy sites: [{biggest.project}] {server['path']} "
            f"({server['lines']} lines, {biggest.sites} sites, {server['diagnostics']} diagnostics); "
            f"ast.parse {server['parse_ms']:.1f} ms"
        )
        print(
            f"  process start -> first diagnostics {server['spawn_ms']:.0f} ms; first diagnostics cold "
            f"{server['cold_ms']:.0f} ms, warm {server['warm_ms']:.0f} ms; didChange p50 "
            f"{server['change_p50_ms']:.1f} ms, p95 {server['change_p95_ms']:.1f} ms ({SERVER_EDITS} edits)"
        )

    total = {
        name: sum(r.timing.median(name) for r in results)
        for name in ("parse", "ruff", "ret503", "check", "check_warm")
    }
    targets = [
        ("check / parse-everything, all projects", total["check"] / total["parse"], 0.25, "x"),
        ("check / ruff, all projects", total["check"] / total["ruff"], 3.0, "x"),
        ("check / ruff RET503, all projects", total["check"] / total["ret503"], CORPUS_RET503_LIMIT_X, "x"),
    ]
    if slowest:
        targets.append(("slowest single file", slowest[0].seconds, 0.5, "s"))
    if results:
        worst = max(results, key=lambda r: r.timing.median("check") / r.timing.median("ret503"))
        targets.append(
            (
                f"worst repository / RET503 ({worst.name})",
                worst.timing.median("check") / worst.timing.median("ret503"),
                PROJECT_RET503_LIMIT_X,
                "x",
            )
        )
    small_ones = [r for r in results if r.py_files < SMALL_REPO_FILES]
    if small_ones:  # each of its cold runs, not their median
        slowest_small = max(small_ones, key=lambda r: max(r.timing.check))
        targets.append(
            (
                f"slowest run, under {SMALL_REPO_FILES} files ({slowest_small.name})",
                max(slowest_small.timing.check),
                SMALL_REPO_LIMIT_S,
                "s",
            )
        )
    if cache:
        targets.append(("re-run, nothing changed / ruff", total["check_warm"] / total["ruff"], 1.0, "x"))
    if one_file:
        targets += [
            ("one named file, cold", one_file["check_s"], 0.5, "s"),
            ("one named file / ruff of it", one_file["check_s"] / one_file["ruff_s"], 10.0, "x"),
        ]
    eithers = []  # (label, value, limit, unit) pairs of which one passing passes the target
    if jax_repo is not None:
        targets.append(("jax repository, whole tree", jax_repo.timing.median("check"), 1.0, "s"))
    for name, measured in one_files:
        eithers.append(
            [
                (f"[{name}] {measured['path']}", measured["check_s"], ONE_FILE_LIMIT_S, "s"),
                ("  or / ruff of it", measured["check_s"] / measured["ruff_s"], ONE_FILE_LIMIT_X, "x"),
            ]
        )
    if lib:
        targets += [
            (
                "CPython Lib/: check / parse-everything",
                lib.timing.median("check") / lib.timing.median("parse"),
                0.25,
                "x",
            ),
            (
                "CPython Lib/: check / ruff RET503",
                lib.timing.median("check") / lib.timing.median("ret503"),
                3.0,
                "x",
            ),
        ]
    if server:
        parse_ms = server["parse_ms"]
        targets += [
            ("server first diagnostics, cold", server["cold_ms"], 2000 + 2 * parse_ms, "ms"),
            ("server didChange p50 / ast.parse", server["change_p50_ms"] / parse_ms, 1.5, "x"),
            ("server didChange p95 / ast.parse", server["change_p95_ms"] / parse_ms, 3.0, "x"),
        ]
    print(
        f"\nTotals (the corpus{', jax repository included' if jax_repo else ''}): parse {total['parse']:.2f}s, "
        f"ruff {total['ruff']:.2f}s, ruff RET503 {total['ret503']:.2f}s, check {total['check']:.2f}s"
        + (f", re-run {total['check_warm']:.2f}s" if cache else ", re-run: not supported yet")
    )
    print(f"{'target':<42}{'measured':>13}{'limit':>13}")
    for label, value, limit, unit in targets:
        print(f"{label:<42}{value:>10.2f} {unit:<2}{limit:>10.2f} {unit:<2}  {verdict(value, limit)}")
    either_passes = [any(value <= limit for _, value, limit, _ in either) for either in eithers]
    for either, passes in zip(eithers, either_passes):
        for label, value, limit, unit in either:
            print(
                f"{label:<42}{value:>10.2f} {unit:<2}{limit:>10.2f} {unit:<2}  {'PASS' if passes else 'FAIL'}"
            )
    print_findings([*results, *([lib] if lib else [])])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine(),
                    "repeat": args.repeat,
                    "cache_supported": cache,
                    "projects": [asdict(r) for r in results],
                    "cpython_lib": asdict(lib) if lib else None,
                    "slowest_files": [asdict(t) for t in slowest],
                    "file_errors": [asdict(t) for t in file_errors],
                    "files_with_sites": [asdict(t) for t in times if t.sites],
                    "one_file": one_file,
                    "one_files": [{"project": name, **measured} for name, measured in one_files],
                    "server": server,
                    "targets": [
                        {"target": label, "measured": value, "limit": limit, "pass": value <= limit}
                        for label, value, limit, _ in targets
                    ]
                    + [
                        {"target": label, "measured": value, "limit": limit, "pass": passes}
                        for either, passes in zip(eithers, either_passes)
                        for label, value, limit, _ in either
                    ],
                },
                indent=2,
            )
        )
    passed = all(value <= limit for _, value, limit, _ in targets) and all(either_passes)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
