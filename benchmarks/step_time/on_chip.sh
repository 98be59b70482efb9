#!/bin/bash
# The step-time round on a TPU machine, from the folder benchmarks/step_time/carry.sh makes
# (carried to the machine: the device tool's `carry`). Installs the models' packages under /tmp,
# then runs chip_round.py within a deadline; the record, the compiled HLO and this log go to $OUT.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/step_round_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
START=$(date +%s)
BUDGET_S=${BUDGET_S:-360}  # no candidate starts after this many seconds from here
SITE=${TMPDIR:-/tmp}/step_round_site
PIP="env PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-compile --no-cache-dir"
$PIP --no-index --no-deps --upgrade --target "$SITE" "$HERE"/wheels/*.whl
# flax's own needs (optax, orbax, tensorstore, ...) from the machine's index; the carried
# flax in $SITE comes first, the machine's JAX before both
$PIP --only-binary=:all: --index-url file:///opt/pypi/simple --target "$SITE-index" flax \
  || echo "flax's needs did not install from the machine's index"
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$SITE:"$SITE-index"
export PYTHONUNBUFFERED=1
python3 -c 'import platform, jax, flax; print(platform.libc_ver(), "jax", jax.__version__, "flax", flax.__version__)'
echo "installed in $(( $(date +%s) - START )) s"
python3 "$HERE/checkout/benchmarks/step_time/chip_round.py" --cache "$HERE/repos" --out "$OUT" \
  --budget-s $(( BUDGET_S - ($(date +%s) - START) )) "$@"
echo "round done in $(( $(date +%s) - START )) s"
