#!/bin/bash
# Round 3 of the step-time calibration, a held-out check (one part of a combined device round):
# the f32 stack, then recurrentgemma's candidates the deadline left unmeasured in round 2, whose
# predictions benchmarks/records/step_time_v5e_heldout.json committed before the round.
# One file back: $OUT/h45/step_round.json (the log goes to the output). Ends within 180 s.
#   bash benchmarks/out/step_round/final_part.sh   (from the folder carry.sh makes)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
START=$(date +%s)
SITE=${TMPDIR:-/tmp}/step_round_site
PIP="env PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-compile --no-cache-dir"
$PIP --no-index --no-deps --upgrade --target "$SITE" "$HERE"/wheels/*.whl
$PIP --only-binary=:all: --index-url file:///opt/pypi/simple --target "$SITE-index" flax \
  || echo "flax's needs did not install from the machine's index"
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$SITE:"$SITE-index" PYTHONUNBUFFERED=1
echo "installed in $(( $(date +%s) - START )) s"
mkdir -p "$OUT/h45"
timeout $(( 178 - ($(date +%s) - START) )) python3 "$HERE/checkout/benchmarks/step_time/chip_round.py" \
  --cache "$HERE/repos" --out "$OUT/h45" --light --budget-s $(( 125 - ($(date +%s) - START) )) \
  --only f32_stack --only recurrentgemma --skip recurrentgemma=None \
  --skip recurrentgemma=jax.checkpoint_policies.nothing_saveable \
  --skip recurrentgemma=jax.checkpoint_policies.dots_saveable
echo "h45 part done in $(( $(date +%s) - START )) s"
