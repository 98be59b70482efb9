#!/bin/bash
# One round on a TPU machine (docs/accelerators.md, "Tests without and with a chip"), in two parts
# that each fit one call of the device tool (600 s):
#   bash tools/tpu_round.sh tests   # the tpu tests, the accelerator tests, the editor's advisor lens
#                                   # with the chip free and held, and the CLI free and held
#   bash tools/tpu_round.sh bench   # advise --compile against JAX's own compile on the chip, and
#                                   # beside a process that holds the chip
#   bash tools/tpu_round.sh offload # an offloading step whose XLA peak (host temporaries counted)
#                                   # is over the chip: said to fit, and run on it (issue 47)
# It installs the wheels carried in dist/whl-tpu first; every log goes under $OUT. Each step has its
# own time limit, so that a stuck step still leaves the others' logs.
PART=${1:-tests}
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site dist/whl-tpu/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site:$PWD PYTHONUNBUFFERED=1
PYTEST="python3 -m pytest -p no:xdist -p no:cacheprovider -rs"
{
  date -u; python3 -c "import jax, jaxlib, platform; print('jax', jax.__version__, platform.libc_ver())"
  ls /dev/accel* /dev/vfio 2>&1; nproc; free -g | head -2; uptime
} > $OUT/machine-$PART.log 2>&1
python3 -m compileall -q jax_lsp
# A training job's stand-in: it holds the chip and computes until killed.
HOLDER='
import jax, jax.numpy as jnp
x = jnp.ones((2048, 2048)); print("holder on", jax.devices()[0], flush=True)
n = 0
while True:
    x = jnp.tanh(x @ x); x.block_until_ready(); n += 1
    if n % 2000 == 0: print("holder steps", n, flush=True)
'
SITE=tests/fixtures/advisor/peak_stack.py
ADVISE="python3 -m jax_lsp advise $SITE --example peak_stack.py:example --root tests/fixtures/advisor"
LENS="tests/server/features/test_advisor.py::test_lens_hints_compare_and_quick_fix"

if [ "$PART" = tests ]; then
  (time timeout 300 $PYTEST -m tpu -v -s tests/trace/test_on_tpu.py \
    tests/server/features/test_advisor.py::test_on_a_tpu_the_lens_shows_the_compiled_peak_for_the_chip) \
    > $OUT/tpu_tests.log 2>&1
  timeout 60 $PYTEST -q "$LENS" > $OUT/lens.log 2>&1
  python3 -c "$HOLDER" > $OUT/holder.log 2>&1 &
  HELD=$!
  sleep 12
  {
    timeout 60 $PYTEST -q "$LENS"
    echo "== trace jax101 (holder running)"; time timeout 60 python3 -m jax_lsp trace examples/jax101_policy_returns_none.py:7
    echo "== advise --run --compile (holder running)"; time timeout 90 $ADVISE --run --compile --timeout 120
  } > $OUT/busy.log 2>&1
  kill $HELD; wait $HELD 2>/dev/null
  {
    echo "== advise (defaults, chip free)"; time timeout 60 $ADVISE
    echo "== advise --run (chip free)"; time timeout 60 $ADVISE --run --output-format json
  } > $OUT/free.log 2>&1
fi
if [ "$PART" = bench ]; then
  timeout 540 python3 benchmarks/bench_compile_target.py --direct chip --python python3 --beside-holder \
    --out $OUT/bench_compile_target.json > $OUT/bench.log 2>&1
  echo "exit $?" >> $OUT/bench.log
fi
if [ "$PART" = offload ]; then
  timeout 60 python3 tools/tpu_offload_fit.py > $OUT/offload.log 2>&1
  echo "exit $?" >> $OUT/offload.log
fi
echo "== left behind" >> $OUT/machine-$PART.log
ps -eo pid,ppid,etime,args | grep -v grep | grep -E "python|agent" >> $OUT/machine-$PART.log
