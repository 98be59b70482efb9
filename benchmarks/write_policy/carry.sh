#!/bin/bash
# Makes the folder the written policies' round carries to a TPU machine (the device tool's
# `carry`), from benchmarks/write_policy_models.py's output (default benchmarks/out/write_round):
#   bash benchmarks/write_policy/carry.sh [ROUND] [FOLDER]   (FOLDER default benchmarks/out/write_chip)
# It holds on_chip.sh and on_chip.py, a copy of this checkout's jax_lsp, the cases (each model's
# repository with the written policy's edits applied) and the wheels the machine's index lacks.
set -eu
CHECKOUT=$(cd "$(dirname "$0")/../.." && pwd)
ROUND=${1:-$CHECKOUT/benchmarks/out/write_round}
DEST=${2:-$CHECKOUT/benchmarks/out/write_chip}
rm -rf "$DEST" && mkdir -p "$DEST/checkout" "$DEST/wheels"
cp "$CHECKOUT/benchmarks/write_policy/on_chip.sh" "$CHECKOUT/benchmarks/write_policy/on_chip.py" "$DEST/"
cp -r "$CHECKOUT/jax_lsp" "$DEST/checkout/"
python3 - "$ROUND" "$DEST" <<'PY'
import json, shutil, sys
from pathlib import Path
round_, dest = Path(sys.argv[1]), Path(sys.argv[2])
cases = json.loads((round_ / "cases.json").read_text())
for case in cases:
    shutil.copytree(round_ / case["copy"], dest / case["copy"], ignore=shutil.ignore_patterns(".git", "tests", "docs", "colabs", "examples"))
(dest / "cases.json").write_text(json.dumps(cases, indent=1))
print(len(cases), "cases")
PY
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$DEST/wheels" \
  flax==0.12.8 equinox==0.13.8 typeguard==2.13.3 aqtp==0.9.0 wadler_lindig==0.1.8 jaxtyping==0.3.11 \
  einops==0.8.2 sentencepiece==0.2.3 absl-py==2.5.1
du -sh "$DEST"
