"""The advisor on a checkpoint site in a library, on a real one (issue 37.4): haliax's
`filter_checkpoint` (`src/haliax/_src/scan.py:186`), advised with benchmarks/advise_models/haliax.py.

    python benchmarks/advise_library_site.py [--cache DIR] [--installed]

The checkout and its example as benchmarks/advise_against_jax.py sets them up (haliax imports `aqt`:
PyPI's aqtp). Runs `jax-lsp advise --budget 60MiB --output-format json` as a user does and checks
what docs/advise.md ("A checkpoint in a library") promises: the user's call that chooses the
policy is `gradient_checkpointing=...` of `hnn.Stacked.init` in the example, the current policy is
written as there, and every computed residual is named after a line of the example, named values
keeping their names. The user's project is a folder that holds only the example, haliax
outside it (a package of the project is the user's own code, no library): by default the
checkout's `src` on PYTHONPATH, as `pip install -e` puts it; ``--installed``: haliax as pip
installs it (its package copied into a folder named site-packages on PYTHONPATH, the checkout's
`src` not), with `--compile`: every candidate's step must compile too (each compile is a request
of its own, to an agent that imported haliax for the table). Prints what it found; exit 0 when
all hold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from advise_against_jax import DEFAULT_CACHE, HERE, MODELS, Model, _environment

BUDGET = "60MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--installed", action="store_true", help="haliax installed; with --compile")
    args = parser.parse_args(argv)
    [model] = [m for m in MODELS if m.name == "haliax"]
    checkout = args.cache / f"{model.name}-{model.commit}"
    if not checkout.is_dir():
        print(f"{model.name}: not in {args.cache}")
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        if args.installed:
            root, site, env = _installed(checkout, model, Path(scratch))
        else:  # an editable install: the checkout's src on the path, outside the project
            root, site, env = (
                Path(scratch) / "project",
                str(checkout / model.site),
                _environment(checkout, model),
            )
            root.mkdir()
        shutil.copy(HERE / "advise_models" / f"{model.name}.py", root / "advise_example.py")
        command = [sys.executable, "-m", "jax_lsp", "advise", site, "--example", "advise_example.py:example"]
        command += ["--root", ".", "--budget", BUDGET, "--output-format", "json"]
        command += ["--compile"] if args.installed else []
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        print(done.stdout[-2000:], done.stderr[-2000:])
        return 1
    data = json.loads(done.stdout)
    call = data["user_call"] or {}
    current = next(p for p in data["policies"] if p["current"])
    computed = [r for p in data["policies"] for r in p["residuals"] if r["kind"] == "computed"]
    checks = {
        "the user's call": (call.get("path"), call.get("keyword"), call.get("callee"))
        == ("advise_example.py", "gradient_checkpointing", "hnn.Stacked.init"),
        "the current policy as written there": current["policy"]
        == f"gradient_checkpointing={call.get('text')}",
        "residuals named after the example's lines": bool(computed)
        and {r["path"] for r in computed} == {"advise_example.py"},
        "named residuals keep their names": any(r["name"] for r in computed),
    }
    if args.installed:
        errors = [p.get("compile_error") for p in data["policies"] if p.get("compiled") is None]
        checks["every candidate compiled"] = not errors
        if errors:
            print(f"   {len(errors)} of {len(data['policies'])} did not compile: {errors[0]}")
    print(f"== {model.name} ({site}), --budget {BUDGET}{' --compile' if args.installed else ''}")
    print(f"   user_call: {json.dumps(call)}")
    print(f"   current: {current['policy']}; suggested: {(data['suggested'] or {}).get('policy')}")
    for what, held in checks.items():
        print(f"   {'ok ' if held else 'NOT'} {what}")
    return 0 if all(checks.values()) else 1


def _installed(checkout: Path, model: Model, scratch: Path) -> tuple[Path, str, dict[str, str]]:
    """A project folder, the site's path and the environment where haliax is installed: its
    package in ``scratch``/site-packages, on PYTHONPATH (the checkout's `src` is not)."""
    packages = scratch / "site-packages"
    shutil.copytree(checkout / "src" / "haliax", packages / "haliax")
    root = scratch / "project"
    root.mkdir()
    path, line = model.site.rsplit(":", 1)
    site = f"{packages / Path(path).relative_to('src')}:{line}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(HERE.parent), str(packages), env.get("PYTHONPATH")) if p
    )
    return root, site, env


if __name__ == "__main__":
    sys.exit(main())
