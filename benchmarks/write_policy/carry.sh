#!/bin/bash
# Makes the folder the written policies' round carries to a TPU machine (the device tool's
# `carry`), from benchmarks/write_policy_models.py's output (default benchmarks/out/write_round):
#   bash benchmarks/write_policy/carry.sh [ROUND] [FOLDER]   (FOLDER default benchmarks/out/write_chip)
# It holds on_chip.sh and on_chip.py, a copy of this checkout's jax_lsp, and the cases (each
# model's repository with the written policy's edits applied) of the models in MODELS (default
# "nanodo tunix": those that import with TPU_NOTES' wheels and flax alone).
set -eu
CHECKOUT=$(cd "$(dirname "$0")/../.." && pwd)
ROUND=${1:-$CHECKOUT/benchmarks/out/write_round}
DEST=${2:-$CHECKOUT/benchmarks/out/write_chip}
rm -rf "$DEST" && mkdir -p "$DEST/checkout"
cp "$CHECKOUT/benchmarks/write_policy/on_chip.sh" "$CHECKOUT/benchmarks/write_policy/on_chip.py" "$DEST/"
cp -r "$CHECKOUT/jax_lsp" "$DEST/checkout/"
MODELS=${MODELS:-nanodo tunix} python3 - "$ROUND" "$DEST" <<'PY'
import json, os, shutil, sys
from pathlib import Path
round_, dest = Path(sys.argv[1]), Path(sys.argv[2])
models = os.environ["MODELS"].split()
cases = [c for c in json.loads((round_ / "cases.json").read_text()) if c["model"] in models]
skip = shutil.ignore_patterns(".git", "tests", "docs", "colabs", "examples", "*.md", "__pycache__")
for case in cases:
    shutil.copytree(round_ / case["copy"], dest / case["copy"], ignore=skip)
(dest / "cases.json").write_text(json.dumps(cases, indent=1))
print(len(cases), "cases:", ", ".join(c["copy"] for c in cases))
PY
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
du -sh "$DEST"
