#!/bin/bash
# Makes the folder the step-time round carries to a TPU machine (the device tool's `carry`):
#   bash benchmarks/step_time/carry.sh [FOLDER]   (default benchmarks/out/step_round, git-ignored)
# It holds on_chip.sh (the command), a copy of this checkout's jax_lsp and benchmarks the round
# runs, the four model repositories from the cache (benchmarks/advise_models.py says how to make
# them) and the wheels the machine's own index lacks or may hold at another version.
set -eu
CHECKOUT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-$CHECKOUT/benchmarks/out/step_round}
CACHE=${CACHE:-$HOME/.cache/jax-lsp-corpus/models}
rm -rf "$DEST/checkout" "$DEST/repos"
mkdir -p "$DEST/checkout/benchmarks" "$DEST/repos" "$DEST/wheels"
cp "$CHECKOUT/benchmarks/step_time/on_chip.sh" "$CHECKOUT/benchmarks/step_time/final_part.sh" "$DEST/"
cp -r "$CHECKOUT/jax_lsp" "$DEST/checkout/"
cp -r "$CHECKOUT/benchmarks/step_time" "$CHECKOUT/benchmarks/advise_models" "$DEST/checkout/benchmarks/"
find "$DEST/checkout" -name __pycache__ -prune -exec rm -rf {} +
for name in nanodo-10aefdeed40a63293daf112b91a5538cd24fa3a4 haliax-f41e7d40c63dc486b69c5d854270a9158fe3dd39 \
  recurrentgemma-2efa84dac0e68e63547a27a18fa943c98f1c312e tunix-c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3; do
  cp -r "$CACHE/$name" "$DEST/repos/"
  rm -f "$DEST/repos/$name/advise_example.py"
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$DEST/wheels" \
  flax==0.12.8 equinox==0.13.8 typeguard==2.13.3 aqtp==0.9.0 wadler_lindig==0.1.8 jaxtyping==0.3.11 \
  einops==0.8.2 sentencepiece==0.2.3 absl-py==2.5.1
du -sh "$DEST"
