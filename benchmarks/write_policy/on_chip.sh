#!/bin/bash
# The written policies' part of the final round on a TPU machine, from the folder carry.sh makes
# (the device tool's `carry`): each case's site run with the written and the best named policy
# (on_chip.py). Needs only what TPU_NOTES' wheels and the machine's index give (flax, equinox,
# jaxtyping on PYTHONPATH); writes ONE log, $OUT/h46_write.log; stops starting cases at DEADLINE_S.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/write_round_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout "${TIMEOUT_S:-118}" python3 "$HERE/on_chip.py" "$HERE" --deadline "${DEADLINE_S:-95}" > "$OUT/h46_write.log" 2>&1
echo "exit $?" >> "$OUT/h46_write.log"
