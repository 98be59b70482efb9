"""Generate a Python tree for `bench_check.py`: ordinary numeric modules, a few with remat policies.

Policy packages hold a `policies.py` (policy functions, some broken on purpose) and model
modules that use them through the real forms: `jax.checkpoint(f, policy=...)`,
`@functools.partial(jax.checkpoint, policy=...)`, `nn.remat(Module, policy=...)`,
`jax.remat`, imported from the package by absolute and relative imports. Every planted
mistake is written to `manifest.json` as (path, line, code); nothing else may be reported.

    python benchmarks/gen_tree.py OUT [--modules 2000] [--lines 300] [--policy-share 0.03]
                                      [--every-file-policy] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

MODULES_PER_PACKAGE = 20
MODELS_PER_POLICY_PACKAGE = 3


class Writer:
    """Lines of one module, and the mistakes planted in it."""

    def __init__(self, path: str):
        self.path = path
        self.lines: list[str] = []
        self.expected: list[tuple[str, int, str]] = []

    def add(self, *lines: str, expect: str | None = None) -> None:
        """Add lines; `expect` plants a finding on the first of them."""
        if expect:
            self.expected.append((self.path, len(self.lines) + 1, expect))
        self.lines.extend(lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# Ordinary numeric code ------------------------------------------------------------------
def _filler_function(rng: random.Random, name: str) -> list[str]:
    a, b = rng.randint(2, 99), round(rng.uniform(0.1, 9.9), 3)
    shapes = [
        [
            f"def {name}(values, scale={b}):",
            f'    """Weighted running total of `values` above {a}."""',
            "    total = 0.0",
            "    for index, value in enumerate(values):",
            f"        if value > {a}:",
            "            total += value * scale",
            "        else:",
            "            total -= value / (index + 1)",
            "    return total",
        ],
        [
            f"def {name}(matrix):",
            "    centered = matrix - np.mean(matrix, axis=0)",
            "    cov = centered.T @ centered / max(len(matrix) - 1, 1)",
            "    eigenvalues, eigenvectors = np.linalg.eigh(cov)",
            f"    order = np.argsort(eigenvalues)[::-1][:{a % 7 + 1}]",
            "    return eigenvalues[order], eigenvectors[:, order]",
        ],
        [
            f"def {name}(xs, ys):",
            "    if len(xs) != len(ys):",
            '        raise ValueError("xs and ys differ in length")',
            "    mean_x = sum(xs) / len(xs)",
            "    mean_y = sum(ys) / len(ys)",
            "    num = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))",
            "    den = math.sqrt(sum((x - mean_x) ** 2 for x in xs) * sum((y - mean_y) ** 2 for y in ys))",
            f"    return num / den if den else {b}",
        ],
        [
            f"def {name}(signal, width={a % 9 + 2}):",
            "    kernel = np.ones(width) / width",
            '    smoothed = np.convolve(signal, kernel, mode="same")',
            "    residual = signal - smoothed",
            f"    return smoothed, float(np.std(residual)) * {b}",
        ],
    ]
    return shapes[rng.randrange(len(shapes))] + ["", ""]


def _filler_class(rng: random.Random, name: str) -> list[str]:
    rate = round(rng.uniform(0.001, 0.5), 4)
    return [
        f"class {name}:",
        f'    """Exponential moving statistics with rate {rate}."""',
        "",
        f"    def __init__(self, rate={rate}):",
        "        self.rate = rate",
        "        self.mean = 0.0",
        "        self.var = 0.0",
        "        self.count = 0",
        "",
        "    def update(self, value):",
        "        self.count += 1",
        "        delta = value - self.mean",
        "        self.mean += self.rate * delta",
        "        self.var = (1 - self.rate) * (self.var + self.rate * delta * delta)",
        "        return self.mean",
        "",
        "    def summary(self):",
        '        return {"mean": self.mean, "std": math.sqrt(self.var), "count": self.count}',
        "",
        "",
    ]


def _fill(w: Writer, rng: random.Random, target_lines: int, tag: str) -> None:
    n = 0
    while len(w.lines) < target_lines:
        n += 1
        if n % 6 == 0:
            w.add(*_filler_class(rng, f"Stats{tag}{n}"))
        else:
            w.add(*_filler_function(rng, f"compute_{tag}_{n}"))


HEADER = ['"""Generated module."""', "", "import math", "", "import numpy as np", "", ""]


# A small valid policy and site, for the scenario where every file mentions one ----------
def _local_policy(w: Writer, tag: str) -> None:
    w.add(
        "import jax",
        "",
        "",
        f"def _keep_dots_{tag}(prim, *args, **params):",
        '    return prim.name == "dot_general"',
        "",
        "",
        f"def _step_{tag}(x):",
        "    return jax.numpy.tanh(x @ x)",
        "",
        "",
        f"step_{tag} = jax.checkpoint(_step_{tag}, policy=_keep_dots_{tag})",
        "",
        "",
    )


# Policies: valid ones, and each kind of planted mistake ----------------------------------
def _policies_module(w: Writer, broken: list[str]) -> list[str]:
    """Write policies.py; return the names of the policies the models must use."""
    w.add(
        '"""Remat policies of this package."""',
        "",
        "import numpy as np",
        "from jax.ad_checkpoint import Offloadable, Recompute",
        "",
        "",
        "def save_dots(prim, *args, **params):",
        '    return prim.name == "dot_general"',
        "",
        "",
        "def offload_dots(prim, *_, **__):",
        '    if prim.name == "dot_general":',
        '        return Offloadable(src="device", dst="pinned_host")',
        "    return Recompute",
        "",
        "",
    )
    names = ["save_dots", "offload_dots"]
    for kind in broken:
        name = f"broken_{kind.lower()}"
        names.append(name)
        if kind == "JAX101":
            w.add(f"def {name}(prim, *args, **params):", expect=kind)
            w.add('    if prim.name == "dot_general":', "        return True", "", "")
        elif kind == "JAX102":
            w.add(f"def {name}(prim, *args, **params):", '    if prim.name == "dot_general":')
            w.add("        return Offloadable", expect=kind)
            w.add("    return False", "", "")
        elif kind == "JAX103":
            w.add(f"def {name}(prim, *avals, **params):")
            w.add("    return np.any([a.size > 4096 for a in avals])", expect=kind)
            w.add("", "")
        elif kind == "JAX104":
            w.add(f"def {name}(prim, *args, **params):")
            w.add('    return prim == "conv_general_dilated"', expect=kind)
            w.add("", "")
        elif kind == "JAX108":
            w.add(f"def {name}(prim):", expect=kind)
            w.add('    return prim.name == "dot_general"', "", "")
    return names


def _model_module(w: Writer, package: str, policies: list[str], style: int, site_mistake: str | None) -> None:
    imported = ", ".join(policies)
    if style == 0:
        w.add(f"from .policies import {imported}")
    else:
        w.add(f"from {package}.policies import {imported}")
    w.add("import functools", "", "import flax.linen as nn", "import jax", "import jax.numpy as jnp", "", "")
    for i, policy in enumerate(policies):
        form = (i + style) % 4
        if form == 0:
            w.add(f"def layer_{i}(x):", "    return jnp.tanh(x @ x)", "", "")
            w.add(f"layer_{i}_remat = jax.checkpoint(layer_{i}, policy={policy})", "", "")
        elif form == 1:
            w.add(f"@functools.partial(jax.checkpoint, policy={policy})")
            w.add(f"def block_{i}(x):", "    return jnp.sin(x) @ x", "", "")
        elif form == 2:
            w.add(f"class Dense{i}(nn.Module):", "    @nn.compact", "    def __call__(self, x):")
            w.add("        return nn.Dense(8)(x)", "", "")
            w.add(f"Dense{i}Remat = nn.remat(Dense{i}, policy={policy})", "", "")
        else:
            w.add(f"def mlp_{i}(x):", "    return jnp.cos(x @ x.T)", "", "")
            w.add(f"mlp_{i}_remat = jax.remat(mlp_{i}, policy={policy})", "", "")
    w.add("def head(x):", "    return jnp.mean(x)", "", "")
    if site_mistake == "JAX106":
        w.add("head_remat = jax.checkpoint(", "    head,")
        w.add("    policy=jax.checkpoint_policies.dots_saveable(),", expect="JAX106")
        w.add(")", "", "")
    elif site_mistake == "JAX107":
        w.add("head_remat = jax.checkpoint(", "    head,")
        w.add("    policy=jax.checkpoint_policies.save_only_these_names,", expect="JAX107")
        w.add(")", "", "")
    elif site_mistake == "JAX109":
        w.add("@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)", expect="JAX109")
        w.add("def tail(x):", "    return jnp.sum(x * x)", "", "")
    else:
        w.add(
            "head_remat = jax.checkpoint(head, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)"
        )
        w.add("", "")


POLICY_MISTAKES = ["JAX101", "JAX102", "JAX103", "JAX104", "JAX108"]
SITE_MISTAKES = ["JAX106", "JAX107", "JAX109", None]


def generate(
    out: Path, modules: int, lines: int, policy_share: float, every_file_policy: bool, seed: int
) -> dict:
    rng = random.Random(seed)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    # A project root of its own, so the check resolves imports here and nowhere else.
    (out / "pyproject.toml").write_text('[project]\nname = "generated"\n\n[tool.jax-lsp]\n')
    per_policy_package = 1 + MODELS_PER_POLICY_PACKAGE
    policy_packages = max(1, round(modules * policy_share / per_policy_package))
    writers: list[Writer] = []
    written = 0
    package_index = 0
    while written < modules:
        package = f"pkg{package_index:03d}"
        (out / package).mkdir()
        (out / package / "__init__.py").write_text("")
        if package_index < policy_packages:
            broken = rng.sample(POLICY_MISTAKES, k=rng.randint(1, 3))
            w = Writer(f"{package}/policies.py")
            names = _policies_module(w, broken)
            _fill(w, rng, lines, f"p{package_index}")
            writers.append(w)
            # Spread the policies over the models; each broken one is used exactly once.
            for m in range(MODELS_PER_POLICY_PACKAGE):
                w = Writer(f"{package}/model_{m}.py")
                _model_module(
                    w,
                    package,
                    names[m::MODELS_PER_POLICY_PACKAGE] or ["save_dots"],
                    m % 2,
                    rng.choice(SITE_MISTAKES),
                )
                _fill(w, rng, lines, f"m{package_index}_{m}")
                writers.append(w)
            written += per_policy_package
        else:
            for m in range(min(MODULES_PER_PACKAGE, modules - written)):
                w = Writer(f"{package}/mod_{m:02d}.py")
                w.add(*HEADER)
                if every_file_policy:
                    _local_policy(w, f"{package_index}_{m}")
                _fill(w, rng, lines, f"{package_index}_{m}")
                writers.append(w)
                written += 1
        package_index += 1
    expected = []
    total_lines = 0
    for w in writers:
        (out / w.path).write_text(w.text())
        expected += w.expected
        total_lines += len(w.lines)
    manifest = {"modules": len(writers), "lines": total_lines, "expected": sorted(expected)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--modules", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=300, help="lines per module")
    parser.add_argument(
        "--policy-share", type=float, default=0.03, help="share of modules in policy packages"
    )
    parser.add_argument(
        "--every-file-policy", action="store_true", help="every module defines and uses a policy"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    manifest = generate(
        args.out, args.modules, args.lines, args.policy_share, args.every_file_policy, args.seed
    )
    print(
        f"{manifest['modules']} modules, {manifest['lines']} lines, {len(manifest['expected'])} planted mistakes"
    )


if __name__ == "__main__":
    main()
