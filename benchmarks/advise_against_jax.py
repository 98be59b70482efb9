"""The advisor's figures on public models against JAX's own, per candidate, and its cold and warm
times (issue 37).

    python benchmarks/advise_against_jax.py [--cache DIR] [--only NAME] [--example FUNCTION]
                                            [--no-compile] [--compile-timeout SECONDS]

For each model (a repository checked out in the cache folder as benchmarks/advise_models.py
describes, its example from benchmarks/advise_models/NAME.py copied to its root as
`advise_example.py`), it advises the site through the editor's path (`TraceService`, one agent):
a cold advise (the agent up, the model never imported), a warm one (the same again once the
agent has preloaded the model), then one with `compile=True` (`advise --compile`: each
candidate's step compiled in a process of its own, the defaults' limits). Then, in a new
interpreter, JAX's own figures for every candidate the advisor lists: the example run with every
checkpoint of the model's factory (Flax's `nn.remat`, Equinox's `filter_checkpoint`, or
`jax.checkpoint` itself) given that policy (the current one: the code as it stands), and

- residuals: `jax._src.ad_checkpoint.saved_residuals`, item by item in JAX's order the same
  shape, dtype, memory and kind as the advisor's (benchmarks/advise_models.py's comparison);
- compiled: `memory_analysis()` of `jax.jit` of the step the advisor compiles (the gradient of
  the floating-point leaves, `jax.vjp` with ones), its `temp_size_in_bytes` against the advisor's;
- recompute: the `dot_general` FLOPs of the backward jaxpr of `jax.vjp` (`make_jaxpr` of its
  function; a scan's body once per iteration) beyond those under `everything_saveable`, against
  the advisor's `recompute_flops` (within 10%).

Last, the budget's suggestion (`advise --budget` without `--compile`: `check_fit`), for a budget
halfway between each two neighbouring compiled temporaries JAX reports, must fit by JAX's figure;
its compiles are the `--compile` run's answers (the same requests). Exit 0 when everything holds.

The models (nothing committed; their packages install beside the project's:
benchmarks/advise_models/requirements.txt):

| name | repository | commit | site | factory |
|---|---|---|---|---|
| nanodo | google-deepmind/nanodo | 10aefde (2024-06-04) | nanodo/model.py:65 (`nn.remat(TBlock)`, no policy) | linen |
| haliax | stanford-crfm/haliax | f41e7d4 (2025-09-19) | src/haliax/_src/scan.py:186 (`filter_checkpoint` in a scan) | equinox |
| tunix | google/tunix | c7d8950 (2026-08-21) | tunix/models/llama3/model.py:583 (`jax.checkpoint` over `nnx.merge`) | jax |
| recurrentgemma | google-deepmind/recurrentgemma | 2efa84d (2026-02-06) | recurrentgemma/jax/griffin.py:61 (`nn.remat(..., static_argnums=4)`, an RG-LRU scan) | linen |
| simply | google-deepmind/simply | e14c061 (2026-08-18) | simply/model_lib.py:3086 (`jax.remat` under `lax.scan`, the policy from `config.remat_policy`; a registry filled at import) | jax |
| big_vision_gemma | google-research/big_vision | 0127fb6 (2025-05-19) | big_vision/models/ppp/gemma.py:526 (`nn.remat(Block, ...)` under `nn.scan`, the policy from a config dict's string) | linen |
| tunix_qwen3 | google/tunix | c7d8950 (2026-08-21) | tunix/models/qwen3/model.py:1202 (`jax.checkpoint` over `nnx.merge` of a decoder layer, Flax NNX) | jax |

haliax is a src layout: `src` goes on PYTHONPATH. Each is made from any copy of the repository's
history: `git --git-dir=REPO.git archive COMMIT | tar -x -C $C/NAME-COMMIT`, as
benchmarks/advise_models.py shows (big_vision_gemma is big_vision's history under its own name;
tunix_qwen3, tunix's). simply needs absl-py, etils, orbax-checkpoint, grain, tokenizers,
sentencepiece, tensorboardX, pyyaml and deprecated beside its requirements here.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from advise_models import advisor_items, first_difference, jax_items  # noqa: E402

from jax_lsp.trace import TraceService  # noqa: E402 (the checkout first)
from jax_lsp.trace.advisor.advice import Advice  # noqa: E402
from jax_lsp.trace.advisor.contract import residual_json  # noqa: E402
from jax_lsp.trace.advisor.fit import check_fit  # noqa: E402
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice  # noqa: E402
from jax_lsp.trace.advisor.request import advise  # noqa: E402
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops  # noqa: E402
from jax_lsp.trace.options import TraceOptions  # noqa: E402
from jax_lsp.trace.result import TraceResult  # noqa: E402

RECOMPUTE_REFERENCE = HERE.parent / "tests" / "recompute_reference.py"
DEFAULT_CACHE = Path.home() / ".cache" / "jax-lsp-corpus" / "models"
CURRENT = "current"  # the reference's name for the site's own policy: the code as it stands
WITHIN = 0.1  # recompute: the advisor's figure within 10% of JAX's


@dataclass(frozen=True)
class Model:
    name: str  # the example's file (benchmarks/advise_models/NAME.py) and the cache folder's prefix
    commit: str
    site: str  # PATH:LINE, relative to the repository's root
    factory: str  # "linen", "equinox" or "jax": which checkpoint function the reference patches
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
    Model("tunix", "c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3", "tunix/models/llama3/model.py:583", "jax"),
    Model(
        "recurrentgemma",
        "2efa84dac0e68e63547a27a18fa943c98f1c312e",
        "recurrentgemma/jax/griffin.py:61",
        "linen",
    ),
    # issue 47's three
    Model("simply", "e14c06121fd9c5967051f0956fb4a84ad84a551c", "simply/model_lib.py:3086", "jax"),
    Model(
        "big_vision_gemma",
        "0127fb6b337ee2a27bf4e54dea79cff176527356",
        "big_vision/models/ppp/gemma.py:526",
        "linen",
    ),
    Model(
        "tunix_qwen3", "c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3", "tunix/models/qwen3/model.py:1202", "jax"
    ),
)

# Run in the repository's root: JAX's figures per policy (argv: tests/recompute_reference.py,
# factory, example, compile, the policies' expressions, "current" for the code as it stands).
REFERENCE = """
import functools, importlib.util, json, sys
import jax, jax.numpy as jnp
from jax._src.ad_checkpoint import saved_residuals

# tests/recompute_reference.py, by its path: the model's own `tests` may come first on sys.path
spec = importlib.util.spec_from_file_location("recompute_reference", sys.argv[1])
reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reference)
dot_flops = reference.dot_flops
factory, function, compiling = sys.argv[2], sys.argv[3], sys.argv[4] == "1"
expressions = sys.argv[5:]
chosen = {"patch": False, "policy": None}

def given(original):
    def patched(fun=None, **kwargs):
        if chosen["patch"]:
            kwargs["policy"] = chosen["policy"]
        if fun is None:
            return functools.partial(patched, **kwargs)
        return original(fun, **kwargs)
    return patched

if factory == "linen":
    import flax.linen as nn
    nn.remat = nn.checkpoint = given(nn.remat)
elif factory == "equinox":
    import equinox as eqx
    eqx.filter_checkpoint = given(eqx.filter_checkpoint)
else:
    jax.checkpoint = jax.remat = given(jax.checkpoint)
sys.path.insert(0, "")
import advise_example

def figures():
    entry = advise_example.__dict__[function]()
    fn, kwargs = entry["fn"], entry.get("kwargs") or {}
    leaves, tree = jax.tree_util.tree_flatten(entry["args"])
    backward = []
    def step(*values):
        wrt = [i for i, v in enumerate(values) if jnp.issubdtype(v.dtype, jnp.inexact)]
        def of(*chosen_values):
            full = list(values)
            for i, v in zip(wrt, chosen_values):
                full[i] = v
            return fn(*jax.tree_util.tree_unflatten(tree, full), **kwargs)
        out, vjp_fn = jax.vjp(of, *(values[i] for i in wrt))
        if not backward:
            backward.append(jax.make_jaxpr(vjp_fn)(jnp.ones_like(out)))
        return vjp_fn(jnp.ones_like(out))
    jax.make_jaxpr(step)(*leaves)
    found = saved_residuals(fn, *entry["args"], **kwargs)
    answer = {
        "flops": dot_flops(backward[0].jaxpr),
        "residuals": [
            {"shape": list(aval.shape), "dtype": str(aval.dtype), "description": description,
             "host": "host" in str(getattr(aval, "memory_space", "")).lower()}
            for aval, description in found
        ],
    }
    if compiling:
        try:
            stats = jax.jit(step).lower(*leaves).compile().memory_analysis()
            answer["temp_bytes"] = int(stats.temp_size_in_bytes)
        except Exception as exc:
            answer["compile_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return answer

answers = {}
for expression in expressions:
    chosen["patch"] = expression != "current"
    chosen["policy"] = None if expression == "current" else eval(expression, {"jax": jax})
    answers[expression] = figures()
print(json.dumps(answers))
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


@dataclass(frozen=True)
class Advised:
    warm: Advice
    compiled: Advice | None
    cold_s: float
    warm_s: float
    compile_s: float | None


class ModelFailed(Exception):
    """A model the advisor could not advise (an import its venv lacks, say): said, and the run goes
    on to the next model, ending in failure."""


def advise_model(root: Path, model: Model, example: str, compiling: bool, compile_timeout: float) -> Advised:
    """The site advised cold, warm and (``compiling``) with `--compile`, each candidate's compile
    stopped after ``compile_timeout`` seconds, with the seconds of each advise."""
    path, line = model.site.rsplit(":", 1)
    os.environ["PYTHONPATH"] = _environment(root, model)["PYTHONPATH"]  # the agent inherits it
    service = TraceService()
    options = TraceOptions(timeout=600, compile_timeout=compile_timeout)
    try:
        _settled(service)
        answers, seconds = [], []
        for compile in (False, False, True) if compiling else (False, False):
            started = time.perf_counter()
            advice = advise(
                service,
                root / path,
                int(line),
                options=options,
                compile=compile,
                example=f"advise_example.py:{example}",
                root=root,
                cwd=root,
            )
            seconds.append(time.perf_counter() - started)
            if not advice.ok:
                raise ModelFailed(f"{model.name}: advise failed: {advice.status}: {advice.message}")
            answers.append(advice)
            _settled(service)
    finally:
        service.shutdown()
    compiled = answers[2] if compiling else None
    return Advised(answers[1], compiled, seconds[0], seconds[1], seconds[2] if compiling else None)


def jax_figures(root: Path, model: Model, example: str, compiling: bool, expressions: list[str]) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(RECOMPUTE_REFERENCE), model.factory, example]
        + ["1" if compiling else "0", *expressions],
        cwd=root,
        env=_environment(root, model),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{model.name}: the reference failed:\n{done.stderr[-3000:]}")
    print(f"   (JAX's figures: {time.perf_counter() - started:.0f} s)")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expression(policy: PolicyAdvice) -> str:
    return CURRENT if policy.current else policy.policy


def _short(policy: PolicyAdvice) -> str:
    name = policy.policy.removeprefix("jax.checkpoint_policies.")
    name = f"{name} (current)" if policy.current else name
    return name if len(name) <= 34 else name[:20] + "…" + name[-13:]


def _ratio(mine: int | None, theirs: int) -> float | None:
    if mine is None:
        return None
    return mine / theirs if theirs else (1.0 if mine == 0 else float("inf"))


def compare(advised: Advised, theirs: dict) -> bool:
    """Print the table of one model's candidates; whether every figure agrees."""
    base = theirs["jax.checkpoint_policies.everything_saveable"]["flops"]
    compiled = {_expression(p): p for p in advised.compiled.policies} if advised.compiled else {}
    held, problems = True, []
    header = f"   {'policy':<36}{'residuals':>14}  {'compiled temp':>21}  {'recompute FLOPs':>29}"
    print(header + "\n" + f"   {'':<36}{'ours/JAX':>14}  {'ours/JAX':>21}  {'ours/JAX':>29}  ratio")
    for policy in advised.warm.policies:
        if policy.error is not None:
            print(f"   {_short(policy):<36}  JAX rejected it: {policy.error[:80]}")
            continue
        jax = theirs[_expression(policy)]
        difference = first_difference(
            advisor_items([residual_json(r, None) for r in policy.residuals]), jax_items(jax["residuals"])
        )
        residuals = f"{len(policy.residuals)}/{len(jax['residuals'])}" + (" ≠" if difference else " =")
        again = compiled.get(_expression(policy))
        if not compiled:
            temp, temp_equal = "-", True
        elif again is None or again.compiled is None or "temp_bytes" not in jax:
            if again is None:
                ours = "missing"
            else:
                ours = (
                    _not_compiled(again)
                    if again.compiled is None
                    else format_bytes(again.compiled.temp_bytes)
                )
            jax_temp = format_bytes(jax["temp_bytes"]) if "temp_bytes" in jax else "failed"
            temp, temp_equal = f"{ours}/{jax_temp} ≠", False
            problems.append(
                f"{_short(policy)}: advisor {_compile_problem(again)}; JAX {jax.get('compile_error', 'ok')}"
            )
        else:
            temp_equal = again.compiled.temp_bytes == jax["temp_bytes"]
            temp = f"{format_bytes(again.compiled.temp_bytes)}/{format_bytes(jax['temp_bytes'])}"
            temp += " =" if temp_equal else " ≠"
        recompute = jax["flops"] - base
        ratio = _ratio(policy.recompute_flops, recompute)
        ratio_ok = ratio is not None and abs(ratio - 1) <= WITHIN
        flops = f"{format_flops(policy.recompute_flops)}/{format_flops(recompute)}"
        shown = f"{ratio:.3f}" if ratio is not None else "-"
        print(f"   {_short(policy):<36}{residuals:>14}  {temp:>21}  {flops:>29}  {shown}")
        if difference:
            print(f"     residuals differ: {difference}")
    for problem in problems:
        print(f"   not compiled: {problem}")
        held = held and difference is None and temp_equal and ratio_ok
    return held


def _not_compiled(policy: PolicyAdvice) -> str:
    """The table's word for a candidate whose step did not compile: what stopped it, else failed."""
    return policy.compile_stopped or ("exhausted" if policy.exhausted else "failed")


def _compile_problem(policy: PolicyAdvice | None) -> str:
    if policy is None:
        return "not compiled"
    if policy.compiled is not None:
        return "ok"
    return policy.compile_error or _not_compiled(policy)


def check_budgets(advised: Advised, theirs: dict) -> bool:
    """For a budget halfway between each two neighbouring compiled temporaries (JAX's), the
    budget's suggestion without --compile (`check_fit`) must fit by JAX's figure."""
    assert advised.compiled is not None
    temps = sorted({t["temp_bytes"] for t in theirs.values() if "temp_bytes" in t})
    held = True
    for low, high in itertools.pairwise(temps):
        budget = (low + high) // 2
        checked = check_fit(advised.warm, budget, _answers_of(advised.compiled))
        suggested = checked.suggest(budget)
        if suggested is None:
            print(f"   --budget {format_bytes(budget)}: no suggestion (JAX: {format_bytes(low)} fits)")
            held = False
            continue
        jax_temp = theirs[_expression(suggested)].get("temp_bytes")
        fits = jax_temp is not None and jax_temp <= budget
        compiled = len(checked.fit_check.policies) if checked.fit_check else 0
        print(
            f"   --budget {format_bytes(budget)}: {_short(suggested)}, JAX compiles it to "
            f"{format_bytes(jax_temp) if jax_temp is not None else '-'}: "
            f"{'fits' if fits else 'DOES NOT FIT'} ({compiled} compiled)"
        )
        held = held and fits
    return held


def _answers_of(compiled: Advice):
    """`check_fit`'s compiling advise, answered from the --compile run (the same requests)."""

    def compile_candidates(policies: list[str]) -> Advice:
        wanted = set(policies)
        return replace(
            compiled, policies=tuple(p for p in compiled.policies if p.current or p.policy in wanted)
        )

    return compile_candidates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", help="one model's name")
    parser.add_argument("--example", default="example", help="the example's function (default example)")
    parser.add_argument("--no-compile", action="store_true", help="residuals and recompute only")
    parser.add_argument(
        "--compile-timeout", type=float, default=300.0, help="seconds per candidate (default 300, the CLI's)"
    )
    args = parser.parse_args(argv)
    compiling = not args.no_compile
    held = True
    for model in MODELS:
        if args.only and model.name != args.only:
            continue
        root = args.cache / f"{model.name}-{model.commit}"
        if not root.is_dir():
            print(f"{model.name}: not in {args.cache}, skipped")
            continue
        shutil.copy(HERE / "advise_models" / f"{model.name}.py", root / "advise_example.py")
        try:
            advised = advise_model(root, model, args.example, compiling, args.compile_timeout)
        except ModelFailed as failed:
            print(failed, flush=True)
            held = False
            continue
        times = f"advise cold {advised.cold_s:.1f} s, warm {advised.warm_s:.1f} s"
        if advised.compile_s is not None:
            times += f", --compile {advised.compile_s:.0f} s"
        print(f"== {model.name} ({model.site}, {args.example}): {times}", flush=True)
        expressions = [_expression(p) for p in advised.warm.policies if p.error is None]
        theirs = jax_figures(root, model, args.example, compiling, expressions)
        held = compare(advised, theirs) and held
        if compiling:
            held = check_budgets(advised, theirs) and held
        sys.stdout.flush()
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
