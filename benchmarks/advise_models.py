"""`jax-lsp advise` on public model repositories, compared with JAX's own `saved_residuals`.

    python benchmarks/advise_models.py [--python PY] [--cache DIR] [--record FILE] [--only NAME]

Each repository is checked out at a pinned commit in the cache folder; its example (ours, in
benchmarks/advise_models/NAME.py: a user's example as docs/advise.md describes) is copied to the
repository's root as `advise_example.py`. Then, from that root, as a user would run it:

    jax-lsp advise SITE --example advise_example.py:FUNCTION --output-format json

(no other flag), and, in another process of the same interpreter, JAX's
`jax._src.ad_checkpoint.saved_residuals(fn, *args, **kwargs)` of the example's entry as the code
stands (the site's current policy). The current policy's residuals the advisor lists must be
JAX's list: the same length, and item by item in JAX's order the same shape, dtype, memory
(device or host) and kind (JAX's description: "from the argument ..." is `argument`, "from a
literal" `literal`, "from a constant" `constant`, anything else `computed`).

It prints a table per repository (the status, the residual counts of the advisor and of JAX,
`equal` or the first difference, the wall time of the advise command: a cold run, a new
interpreter that imports JAX and the model) and, when every repository ran, writes the record
(default benchmarks/records/advise_models.json) that tests/benchmarks/test_advise_models_record.py
checks; `JAX_LSP_MODELS_RECORD=1 pytest tests/benchmarks/test_advise_models_record.py` also runs
this harness again there and fails unless it agrees (a plain test run skips that, saying so).
Exit status 0 when every example is equal, 1 otherwise.

The repositories (the three shapes of issue 26 between them; public code, never committed):

| name | repository | commit | license | shape | site |
|---|---|---|---|---|---|
| ringattention | haoliuhl/ringattention | 204c164 (2024-05-15) | Apache-2.0 | custom_vjp | bpt/ring_attention.py:177 |
| easylm | young-geng/EasyLM | fe5b2c3 (2024-08-12) | Apache-2.0 | namespace-package, config-chosen | EasyLM/models/llama/llama_model.py:783 |
| big_vision | google-research/big_vision | 0127fb6 (2025-05-19) | Apache-2.0 | namespace-package, config-chosen | big_vision/models/proj/image_text/naflex_vit.py:140 |

- ringattention: `ring_attention` is a `jax.custom_vjp` whose passes are registered by a
  module-level `ring_attention.defvjp(...)`. The commit is the last before the package
  `ringattention/`, whose `__init__.py` (and PyPI's ringattention 0.1.2) reads
  `jax.lib.xla_bridge`, which JAX 0.10 no longer has.
- easylm: `EasyLM/models/llama/` has no `__init__.py`; the policy is
  `get_gradient_checkpoint_policy(self.config.remat_policy)`.
- big_vision: `big_vision/models/proj/` and its `image_text/` have no `__init__.py`; the policy
  is `getattr(jax.checkpoint_policies, self.remat_policy, None)`, under `nn.scan`.

Made by hand, once (CI reaches PyPI, not GitHub), with any copy of each repository's history:

    C=~/.cache/jax-lsp-corpus/models
    git clone --bare https://github.com/haoliuhl/ringattention ringattention.git
    mkdir -p $C/ringattention-204c1641360b8d10f9abd7ba7b823173fbe1683a
    git --git-dir=ringattention.git archive 204c1641360b8d10f9abd7ba7b823173fbe1683a \\
        | tar -x -C $C/ringattention-204c1641360b8d10f9abd7ba7b823173fbe1683a
    # likewise young-geng/EasyLM -> $C/easylm-fe5b2c354e25d697fce7cd225e23bbbe72570da3 and
    # google-research/big_vision -> $C/big_vision-0127fb6b337ee2a27bf4e54dea79cff176527356

and the interpreter the models need, beside the project's own (never its dependencies):

    python -m venv $C/venv
    $C/venv/bin/pip install -e . -r benchmarks/advise_models/requirements.txt

A repository whose folder is missing is skipped with a printed line (and no record is written).
`--python` defaults to `$C/venv/bin/python` where it exists, else the interpreter running this;
the advise command runs this checkout's jax_lsp (`python -m jax_lsp` with the checkout first on
PYTHONPATH).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
EXAMPLES = HERE / "advise_models"
DEFAULT_CACHE = Path.home() / ".cache" / "jax-lsp-corpus" / "models"
DEFAULT_RECORD = HERE / "records" / "advise_models.json"
EXAMPLE_COPY = "advise_example.py"  # the example's name at the repository's root

SHAPES = ("namespace-package", "custom_vjp", "config-chosen")
COMPARED = ("shape", "dtype", "memory", "kind")  # of each residual, in JAX's order


@dataclass(frozen=True)
class Repository:
    name: str  # the example's file (benchmarks/advise_models/NAME.py) and the cache folder's prefix
    github: str
    commit: str
    license: str
    shapes: tuple[str, ...]
    site: str  # PATH:LINE of the `policy=` value, relative to the repository's root
    examples: tuple[str, ...]  # functions of the example file

    def folder(self, cache: Path) -> Path:
        return cache / f"{self.name}-{self.commit}"


REPOSITORIES = (
    Repository(
        "ringattention",
        "haoliuhl/ringattention",
        "204c1641360b8d10f9abd7ba7b823173fbe1683a",
        "Apache-2.0",
        ("custom_vjp",),
        "bpt/ring_attention.py:177",
        ("example", "example_7b"),
    ),
    Repository(
        "easylm",
        "young-geng/EasyLM",
        "fe5b2c354e25d697fce7cd225e23bbbe72570da3",
        "Apache-2.0",
        ("namespace-package", "config-chosen"),
        "EasyLM/models/llama/llama_model.py:783",
        ("example", "example_7b_4_layers"),
    ),
    Repository(
        "big_vision",
        "google-research/big_vision",
        "0127fb6b337ee2a27bf4e54dea79cff176527356",
        "Apache-2.0",
        ("namespace-package", "config-chosen"),
        "big_vision/models/proj/image_text/naflex_vit.py:140",
        ("example", "example_vit_e"),
    ),
)

# Run in the repository's root by the interpreter under test: JAX's own list for the example.
REFERENCE = """
import json, sys
sys.path.insert(0, "")
from jax._src.ad_checkpoint import saved_residuals
import advise_example

entry = getattr(advise_example, sys.argv[1])()
found = saved_residuals(entry["fn"], *entry["args"], **(entry.get("kwargs") or {}))
print(json.dumps([
    {"shape": list(aval.shape), "dtype": str(aval.dtype), "description": description,
     "host": "host" in str(getattr(aval, "memory_space", "")).lower()}
    for aval, description in found
]))
"""


def jax_kind(description: str) -> str:
    """The kind of a residual, from JAX's description of it."""
    if description.startswith("from the argument"):
        return "argument"
    if description == "from a literal":
        return "literal"
    if description == "from a constant":
        return "constant"
    return "computed"


Item = tuple[tuple[int, ...], str, str, str]  # COMPARED, in order


def jax_items(found: list[dict]) -> list[Item]:
    return [
        (tuple(r["shape"]), r["dtype"], "host" if r["host"] else "device", jax_kind(r["description"]))
        for r in found
    ]


def advisor_items(residuals: list[dict]) -> list[Item]:
    return [(tuple(r["shape"]), r["dtype"], r["memory"], r["kind"]) for r in residuals]


def _counts(items: list[Item]) -> dict[str, int]:
    return dict(sorted(collections.Counter(kind for *_, kind in items).items()))


def first_difference(ours: list[Item], theirs: list[Item]) -> str | None:
    """None when the lists are equal; else where they first differ, in words."""
    for index, (mine, jax) in enumerate(zip(ours, theirs)):
        if mine != jax:
            return f"#{index}: advisor {_show(mine)}, JAX {_show(jax)}"
    if len(ours) != len(theirs):
        longer, who = (ours, "advisor") if len(ours) > len(theirs) else (theirs, "JAX")
        index = min(len(ours), len(theirs))
        return f"#{index}: only {who} lists {_show(longer[index])} ({len(longer) - index} more)"
    return None


def _show(item: Item) -> str:
    shape, dtype, memory, kind = item
    return f"{dtype}[{','.join(map(str, shape))}] {kind}" + (" (host)" if memory == "host" else "")


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CHECKOUT), env.get("PYTHONPATH")) if p)
    return env


def _advise(python: str, root: Path, site: str, function: str) -> tuple[dict, float]:
    """The advise command's JSON object and its wall time, from the repository's root."""
    command = [python, "-m", "jax_lsp", "advise", site]
    command += ["--example", f"{EXAMPLE_COPY}:{function}", "--output-format", "json", "--timeout", "120"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=_environment(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    try:
        return json.loads(done.stdout), elapsed
    except json.JSONDecodeError:
        message = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": {"status": f"exit {done.returncode}", "message": message[0]}}, elapsed


def _reference(python: str, root: Path, function: str) -> list[dict] | str:
    """JAX's residuals for the example, or the last line of the error that stopped it."""
    done = subprocess.run(
        [python, "-c", REFERENCE, function], cwd=root, env=_environment(), capture_output=True, text=True
    )
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_site(root: Path, site: str) -> None:
    """Fail loudly when the pinned site's line does not hold a `policy=` value."""
    path, line = site.rsplit(":", 1)
    text = (root / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    if "policy=" not in text:
        raise SystemExit(f"{root / path}:{line} holds no policy=: {text.strip()!r}")


def run_example(python: str, repository: Repository, root: Path, function: str) -> dict:
    """One example advised and compared: the record's entry."""
    shutil.copyfile(EXAMPLES / f"{repository.name}.py", root / EXAMPLE_COPY)
    advice, seconds = _advise(python, root, repository.site, function)
    reference = _reference(python, root, function)
    entry = {
        "repository": repository.github,
        "commit": repository.commit,
        "license": repository.license,
        "shapes": list(repository.shapes),
        "site": repository.site,
        "example": f"benchmarks/advise_models/{repository.name}.py:{function}",
        "advise_seconds": round(seconds, 2),
    }
    error = advice.get("error")
    current = next((p for p in advice.get("policies") or () if p.get("current")), None)
    if error or current is None:
        error = error or {"status": "no_current", "message": "no entry is the current policy"}
        return entry | {"status": error["status"], "message": error.get("message"), "equal": False}
    if isinstance(reference, str):
        return entry | {"status": "reference_error", "message": reference, "equal": False}
    ours, theirs = advisor_items(current["residuals"]), jax_items(reference)
    difference = first_difference(ours, theirs)
    return entry | {
        "status": "ok",
        "equal": difference is None,
        "first_difference": difference,
        "advisor": {"residuals": len(ours), "kinds": _counts(ours)},
        "jax": {"residuals": len(theirs), "kinds": _counts(theirs)},
    }


ROW = "  {:<20} {:<16} {:>5} {:>5} {:>9}  {}"


def _row(entry: dict) -> str:
    function = entry["example"].rsplit(":", 1)[1]
    seconds = f"{entry['advise_seconds']:.1f} s"
    if entry["status"] != "ok":
        return ROW.format(function, entry["status"], "-", "-", seconds, (entry.get("message") or "")[:150])
    outcome = "equal" if entry["equal"] else entry["first_difference"]
    ours, theirs = entry["advisor"]["residuals"], entry["jax"]["residuals"]
    return ROW.format(function, entry["status"], ours, theirs, seconds, outcome)


def _interpreter_facts(python: str) -> dict[str, str]:
    code = "import json, platform, jax; print(json.dumps([jax.__version__, platform.python_version()]))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    jax_version, python_version = json.loads(done.stdout)
    return {"jax": jax_version, "python": python_version}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    venv_python = DEFAULT_CACHE / "venv" / "bin" / "python"
    parser.add_argument("--python", default=str(venv_python) if venv_python.exists() else sys.executable)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--record", type=Path, default=DEFAULT_RECORD)
    parser.add_argument("--only", action="append", help="a repository's name (repeat)")
    args = parser.parse_args(argv)

    facts = _interpreter_facts(args.python)
    print(f"interpreter {args.python}: jax {facts['jax']}, Python {facts['python']}")
    entries, missing = [], []
    for repository in REPOSITORIES:
        if args.only and repository.name not in args.only:
            continue
        root = repository.folder(args.cache)
        shapes = ", ".join(repository.shapes)
        print(f"\n== {repository.github} @ {repository.commit[:7]}  {repository.site}  ({shapes})")
        if not root.is_dir():
            print(f"  skipped: {root} is missing (benchmarks/advise_models.py says how to make it)")
            missing.append(repository.name)
            continue
        check_site(root, repository.site)
        print(ROW.format("example", "status", "ours", "JAX", "advise", "residuals, advisor vs JAX"))
        for function in repository.examples:
            entry = run_example(args.python, repository, root, function)
            print(_row(entry), flush=True)
            entries.append(entry)

    if missing or args.only:
        why = f"only {', '.join(args.only)}" if args.only else f"missing {', '.join(missing)}"
        print(f"\nrecord not written: {why}")
    else:
        record = {**facts, "compared": list(COMPARED), "entries": entries}
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"\nrecord: {args.record}")
    return 0 if entries and all(e["equal"] for e in entries) else 1


if __name__ == "__main__":
    sys.exit(main())
