"""The advisor's recompute on public models against JAX's own backward pass, and its cold and warm
times (issue 37).

    python benchmarks/advise_recompute.py [--cache DIR] [--only NAME]

For each model (a repository checked out in the cache folder as benchmarks/advise_models.py
describes, its example from benchmarks/advise_models/NAME.py copied to its root as
`advise_example.py`), it advises the site through the editor's path (`TraceService`, one agent):
a cold advise (the agent up, the model never imported) and a warm one (the same again once the
agent has preloaded the model). Then, in a new interpreter, JAX's own figure for each ready-made
candidate: the example run with every checkpoint of the model's factory (Flax's `nn.remat`,
Equinox's `filter_checkpoint`) given that policy, the `dot_general` FLOPs of the backward jaxpr
of `jax.vjp` (`make_jaxpr` of its function; a scan's body once per iteration) beyond those under
`everything_saveable`. It prints, per candidate, the advisor's `recompute_flops`, JAX's and
their ratio, and the two times. Exit 0 when every ratio is within 10%.

The models (the two of issue 37 whose packages install beside the project's; nothing committed):

| name | repository | commit | site | factory |
|---|---|---|---|---|
| nanodo | google-deepmind/nanodo | 10aefde (2024-06-04) | nanodo/model.py:65 (`nn.remat(TBlock)`, no policy) | linen |
| haliax | stanford-crfm/haliax | f41e7d4 (2025-09-19) | src/haliax/_src/scan.py:186 (`filter_checkpoint` in a scan) | equinox |

haliax is a src layout: `src` goes on PYTHONPATH; it imports `aqt` (PyPI's aqtp,
benchmarks/advise_models/requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from jax_lsp.trace import TraceService  # noqa: E402 (the checkout first)
from jax_lsp.trace.advisor.request import advise  # noqa: E402
from jax_lsp.trace.options import TraceOptions  # noqa: E402
from jax_lsp.trace.result import TraceResult  # noqa: E402

RECOMPUTE_REFERENCE = HERE.parent / "tests" / "recompute_reference.py"
DEFAULT_CACHE = Path.home() / ".cache" / "jax-lsp-corpus" / "models"
READY_MADE = ("nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable", "everything_saveable")


@dataclass(frozen=True)
class Model:
    name: str  # the example's file (benchmarks/advise_models/NAME.py) and the cache folder's prefix
    commit: str
    site: str  # PATH:LINE, relative to the repository's root
    factory: str  # "linen" or "equinox": which checkpoint function the reference patches
    paths: tuple[str, ...] = ()  # folders of the repository to put on PYTHONPATH


MODELS = (
    Model("nanodo", "10aefdeed40a63293daf112b91a5538cd24fa3a4", "nanodo/model.py:65", "linen"),
    Model(
        "haliax",
        "f41e7d40c63dc486b69c5d854270a9158fe3dd39",
        "src/haliax/_src/scan.py:186",
        "equinox",
        ("src",),
    ),
)

# Run in the repository's root: JAX's backward dot_general FLOPs per policy, beyond everything's.
REFERENCE = """
import functools, importlib.util, json, sys
import jax, jax.numpy as jnp

# tests/recompute_reference.py, by its path: the model's own `tests` may come first on sys.path
spec = importlib.util.spec_from_file_location("recompute_reference", sys.argv[1])
reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reference)
dot_flops = reference.dot_flops
factory, names = sys.argv[2], sys.argv[3:]
chosen = {}
if factory == "linen":
    import flax.linen as nn
    remat = nn.remat
    nn.remat = nn.checkpoint = lambda *a, **k: remat(*a, **{**k, "policy": chosen["policy"]})
else:
    import equinox as eqx
    checkpoint = eqx.filter_checkpoint
    def patched(fun=None, *, prevent_cse=True, policy=None):
        if fun is None:
            return functools.partial(patched, prevent_cse=prevent_cse)
        return checkpoint(fun, prevent_cse=prevent_cse, policy=chosen["policy"])
    eqx.filter_checkpoint = patched
sys.path.insert(0, "")
import advise_example

def backward_flops():
    entry = advise_example.example()
    leaves, tree = jax.tree_util.tree_flatten(entry["args"])
    found = []
    def step(*values):
        wrt = [i for i, v in enumerate(values) if jnp.issubdtype(v.dtype, jnp.inexact)]
        def of(*chosen_values):
            full = list(values)
            for i, v in zip(wrt, chosen_values):
                full[i] = v
            return entry["fn"](*jax.tree_util.tree_unflatten(tree, full))
        out, vjp_fn = jax.vjp(of, *(values[i] for i in wrt))
        found.append(jax.make_jaxpr(vjp_fn)(jnp.ones_like(out)))
        return out
    jax.make_jaxpr(step)(*leaves)
    return dot_flops(found[0].jaxpr)

flops = {}
for name in names:
    chosen["policy"] = getattr(jax.checkpoint_policies, name)
    flops[name] = backward_flops()
print(json.dumps({name: value - flops["everything_saveable"] for name, value in flops.items()}))
"""


def _environment(root: Path, model: Model) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(HERE.parent), *(str(root / p) for p in model.paths), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _settled(service: TraceService) -> None:
    """Wait until the agent has imported what the last child used: it answers ``info`` after."""
    agent = service.agent()
    if isinstance(agent, TraceResult):
        raise SystemExit(f"no agent: {agent.message}")
    agent.request("info", TraceOptions().to_params())[1].result()


def advise_twice(root: Path, model: Model) -> tuple[dict[str, int | None], float, float]:
    """The advisor's recompute per candidate, and the seconds of a cold and of a warm advise."""
    path, line = model.site.rsplit(":", 1)
    os.environ["PYTHONPATH"] = _environment(root, model)["PYTHONPATH"]  # the agent inherits it
    service = TraceService()
    try:
        _settled(service)
        seconds, answers = [], []
        for _ in range(2):
            started = time.perf_counter()
            advice = advise(
                service,
                root / path,
                int(line),
                example="advise_example.py:example",
                root=root,
                cwd=root,
                options=TraceOptions(timeout=600),
            )
            seconds.append(time.perf_counter() - started)
            if not advice.ok:
                raise SystemExit(f"{model.name}: advise failed: {advice.message}")
            answers.append(advice)
            _settled(service)
    finally:
        service.shutdown()
    flops = {
        p.policy.removeprefix("jax.checkpoint_policies."): p.recompute_flops for p in answers[1].policies
    }
    return flops, seconds[0], seconds[1]


def jax_recompute(root: Path, model: Model) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(RECOMPUTE_REFERENCE), model.factory, *READY_MADE],
        cwd=root,
        env=_environment(root, model),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{model.name}: the reference failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", help="one model's name")
    args = parser.parse_args(argv)
    within = True
    for model in MODELS:
        if args.only and model.name != args.only:
            continue
        root = args.cache / f"{model.name}-{model.commit}"
        if not root.is_dir():
            print(f"{model.name}: not in {args.cache}, skipped")
            continue
        shutil.copy(HERE / "advise_models" / f"{model.name}.py", root / "advise_example.py")
        ours, cold, warm = advise_twice(root, model)
        theirs = jax_recompute(root, model)
        print(f"== {model.name} ({model.site}): advise cold {cold:.1f} s, warm {warm:.1f} s")
        print(f"   {'policy':<34}{'advisor':>16}{'JAX backward':>16}  ratio")
        for name in READY_MADE:
            mine, jax_figure = ours.get(name), theirs[name]
            ratio = (
                (mine / jax_figure if jax_figure else (1.0 if mine == 0 else float("inf")))
                if mine is not None
                else None
            )
            within = within and ratio is not None and abs(ratio - 1) <= 0.1
            shown = f"{ratio:.3f}" if ratio is not None else "-"
            print(f"   {name:<34}{mine if mine is not None else '-':>16}{jax_figure:>16}  {shown}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
