"""Regenerate jax_lsp/core/jax_facts.json: what each supported JAX release does with policies.

    python tools/jax_facts.py                       # every release from OLDEST to the newest
    python tools/jax_facts.py --releases 0.4.30,0.12.0.1   # only these; the others are kept
    python tools/jax_facts.py --venvs /work/venvs --jobs 2

For each release it reuses (or creates) the venv ``<venvs>/jax-<release>``, with ``jax[cpu]==<release>``
(which pins the matching jaxlib) under the oldest Python that release installs on (3.11 where
it can, else 3.12 or newer: found as ``python3.X`` on PATH or through ``pyenv``), and runs
tools/jax_facts_probe.py there (standard library and jax). The facts of consecutive releases that
agree are stored once, as a range ``{"from", "to", "value"}``: the file changes where JAX changed.
A dev tool: it is not part of the package.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "jax_facts_probe.py"
OUTPUT = ROOT / "jax_lsp" / "core" / "jax_facts.json"
# The oldest release jax-lsp supports (see docs/trace.md, "Supported JAX releases").
OLDEST = "0.4.30"
# Pythons tried for a release, in order: the first whose pip lists the release installs it.
PYTHONS = ("3.11", "3.12", "3.13")
PROBE_TIMEOUT_S = 600


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def find_python(minor: str) -> str | None:
    """``python3.X`` on PATH, else the newest pyenv version ``3.X.*`` (``PYENV_VERSION=v pyenv which``)."""
    found = shutil.which(f"python{minor}")
    if found:  # a pyenv shim is on PATH even when no version selected provides it: ask it
        done = subprocess.run(
            [found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=False
        )
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    if not shutil.which("pyenv"):
        return None
    listed = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True, check=False)
    candidates = sorted(
        (v for v in listed.stdout.split() if re.fullmatch(re.escape(minor) + r"\.\d+", v)), key=version_key
    )
    for candidate in reversed(candidates):
        which = subprocess.run(
            ["pyenv", "which", f"python{minor}"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYENV_VERSION": candidate},
        )
        if which.returncode == 0 and which.stdout.strip():
            return which.stdout.strip()
    return None


def listed_releases(python: str) -> list[str]:
    """The final jax releases pip offers to ``python`` (``pip index versions jax``)."""
    done = subprocess.run(
        [python, "-m", "pip", "index", "versions", "jax"], capture_output=True, text=True, check=False
    )
    match = re.search(r"Available versions: (.*)", done.stdout)
    if not match:
        raise SystemExit(f"pip index versions jax failed under {python}:\n{done.stdout}{done.stderr}")
    return [v.strip() for v in match.group(1).split(",") if re.fullmatch(r"[\d.]+", v.strip())]


def plan(wanted: list[str] | None, oldest: str) -> dict[str, str]:
    """{release: python} for the supported releases (or ``wanted``), each under the first Python
    of PYTHONS that pip offers it to."""
    chosen: dict[str, str] = {}
    for minor in PYTHONS:
        python = find_python(minor)
        if python is None:
            print(
                f"no Python {minor} found (PATH, pyenv): releases that need it are left out", file=sys.stderr
            )
            continue
        for release in listed_releases(python):
            if version_key(release) >= version_key(oldest) and release not in chosen:
                chosen[release] = python
    if wanted is not None:
        missing = [r for r in wanted if r not in chosen]
        if missing:
            raise SystemExit(f"not offered by pip to any Python found: {', '.join(missing)}")
        chosen = {r: chosen[r] for r in wanted}
    return dict(sorted(chosen.items(), key=lambda item: version_key(item[0])))


def venv_for(release: str, python: str, venvs: Path) -> Path:
    """``<venvs>/jax-<release>``, created with jax[cpu]==release unless it already holds it."""
    venv = venvs / f"jax-{release}"
    interpreter = venv / "bin" / "python"
    if interpreter.exists() and list(venv.glob(f"lib/python*/site-packages/jax-{release}.dist-info")):
        return interpreter
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [
            str(interpreter),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            f"jax[cpu]=={release}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"pip install jax[cpu]=={release} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return interpreter


def probe(release: str, python: str, venvs: Path) -> dict:
    started = time.monotonic()
    interpreter = venv_for(release, python, venvs)
    installed = time.monotonic()
    done = subprocess.run(
        [str(interpreter), str(PROBE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=PROBE_TIMEOUT_S,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONDONTWRITEBYTECODE": "1"},
        cwd=venvs,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the probe failed under jax {release}:\n{done.stderr[-3000:]}")
    measured = json.loads(lines[-1])
    if measured["jax"] != release:
        raise RuntimeError(f"the venv for {release} holds jax {measured['jax']}")
    print(
        f"jax {release:<9} python {measured['python']:<7} venv {installed - started:5.1f} s, "
        f"probe {time.monotonic() - installed:4.1f} s",
        file=sys.stderr,
    )
    return measured


def collapse(per_release: dict[str, object], releases: list[str]) -> list[dict]:
    """Ranges of consecutive releases with the same value: [{"from", "to", "value"}]."""
    ranges: list[dict] = []
    for release in releases:
        value = per_release[release]
        if ranges and ranges[-1]["value"] == value:
            ranges[-1]["to"] = release
        else:
            ranges.append({"from": release, "to": release, "value": value})
    return ranges


def expand(data: dict) -> dict[str, dict]:
    """{release: {"python": ..., "facts": {...}}} from the stored ranges."""
    releases = data["releases"]
    found: dict[str, dict] = {r: {"facts": {}} for r in releases}

    def each(ranges: list[dict]):
        for entry in ranges:
            first, last = releases.index(entry["from"]), releases.index(entry["to"])
            for release in releases[first : last + 1]:
                yield release, entry["value"]

    for release, value in each(data["python"]):
        found[release]["python"] = value
    for name, ranges in data["facts"].items():
        for release, value in each(ranges):
            found[release]["facts"][name] = value
    return found


def render(measured: dict[str, dict]) -> dict:
    releases = sorted(measured, key=version_key)
    names = sorted({name for m in measured.values() for name in m["facts"]})
    return {
        "comment": "Generated by `python tools/jax_facts.py` (CONTRIBUTING.md): do not edit by hand.",
        "releases": releases,
        "python": collapse({r: measured[r]["python"] for r in releases}, releases),
        "facts": {
            name: collapse({r: measured[r]["facts"].get(name) for r in releases}, releases) for name in names
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", help="comma-separated releases to (re)measure; the others are kept")
    parser.add_argument("--oldest", default=OLDEST, help=f"the oldest release measured (default {OLDEST})")
    parser.add_argument(
        "--venvs",
        type=Path,
        default=Path(os.environ.get("JAX_FACTS_VENVS", Path.home() / ".cache" / "jax-lsp" / "jax-venvs")),
        help="where the venvs are made or reused (default $JAX_FACTS_VENVS or ~/.cache/jax-lsp/jax-venvs)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="releases installed and probed at once")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)

    wanted = [r.strip() for r in args.releases.split(",")] if args.releases else None
    todo = plan(wanted, args.oldest)
    args.venvs.mkdir(parents=True, exist_ok=True)
    measured: dict[str, dict] = {}
    if wanted is not None and args.output.exists():
        measured = expand(json.loads(args.output.read_text(encoding="utf-8")))
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(probe, r, p, args.venvs): r for r, p in todo.items()}
        for future in concurrent.futures.as_completed(futures):
            release = futures[future]
            try:
                result = future.result()
            except Exception as exc:
                failures.append(f"jax {release}: {exc}")
                continue
            measured[release] = {"python": result["python"], "facts": result["facts"]}
    if failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"{args.output} left as it was", file=sys.stderr)
        return 1
    args.output.write_text(json.dumps(render(measured), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.output} ({len(measured)} releases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
