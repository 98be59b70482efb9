#!/bin/bash
# The written policies' round on a TPU machine, from the folder carry.sh makes (the device tool's
# `carry`): installs the models' packages under /tmp, then measures each case (on_chip.py).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/write_round_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
START=$(date +%s)
SITE=${TMPDIR:-/tmp}/write_round_site
PIP="env PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-compile --no-cache-dir"
$PIP --no-index --no-deps --upgrade --target "$SITE" "$HERE"/wheels/*.whl
$PIP --only-binary=:all: --index-url file:///opt/pypi/simple --target "$SITE-index" flax \
  || echo "flax's needs did not install from the machine's index"
export BASE_PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$SITE:"$SITE-index"
export PYTHONPATH=$BASE_PYTHONPATH PYTHONUNBUFFERED=1
echo "installed in $(( $(date +%s) - START )) s"
python3 "$HERE/on_chip.py" "$HERE" "$OUT"
echo "round done in $(( $(date +%s) - START )) s, exit $?"
