"""The advisor on a checkpoint site in a library, on a real one (issue 37.4): haliax's
`filter_checkpoint` (`src/haliax/_src/scan.py:186`), advised with benchmarks/advise_models/haliax.py.

    python benchmarks/advise_library_site.py [--cache DIR]

The checkout and its example as benchmarks/advise_against_jax.py sets them up (haliax imports `aqt`:
PyPI's aqtp). Runs `jax-lsp advise --budget 60MiB --output-format json` as a user does and checks
what docs/advise.md ("A checkpoint in a library") promises: the user's call that chooses the
policy is `gradient_checkpointing=...` of `hnn.Stacked.init` in the example, the current policy is
written as there, and every computed residual is named after a line of the example, named values
keeping their names. Prints what it found; exit 0 when all hold.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from advise_against_jax import DEFAULT_CACHE, HERE, MODELS, _environment

BUDGET = "60MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    [model] = [m for m in MODELS if m.name == "haliax"]
    root = args.cache / f"{model.name}-{model.commit}"
    if not root.is_dir():
        print(f"{model.name}: not in {args.cache}")
        return 1
    shutil.copy(HERE / "advise_models" / f"{model.name}.py", root / "advise_example.py")
    command = [
        sys.executable,
        "-m",
        "jax_lsp",
        "advise",
        model.site,
        "--example",
        "advise_example.py:example",
    ]
    command += ["--root", ".", "--budget", BUDGET, "--output-format", "json"]
    done = subprocess.run(command, cwd=root, env=_environment(root, model), capture_output=True, text=True)
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
    print(f"== {model.name} ({model.site}), --budget {BUDGET}")
    print(f"   user_call: {json.dumps(call)}")
    print(f"   current: {current['policy']}; suggested: {(data['suggested'] or {}).get('policy')}")
    for what, held in checks.items():
        print(f"   {'ok ' if held else 'NOT'} {what}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
