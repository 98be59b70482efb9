#!/bin/bash
# One round on a TPU machine (docs/accelerators.md, "Tests without and with a chip"): install the
# wheels carried in dist/whl-tpu, run the tpu tests, the accelerator tests, the editor's advisor lens
# with the chip free and held, and the CLI; every log goes under $OUT.
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target /tmp/site dist/whl-tpu/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
{
  date -u; python3 -c "import jax, jaxlib; print('jax', jax.__version__)"; ls /dev/accel* /dev/vfio 2>&1; nproc; free -g | head -2
} > $OUT/machine.log 2>&1
python3 -m compileall -q jax_lsp
(time python3 -m pytest -p no:xdist -p no:cacheprovider -m tpu -v -s -rs tests/trace/test_on_tpu.py) > $OUT/tpu_tests.log 2>&1
python3 -m pytest -p no:xdist -p no:cacheprovider -q -rs tests/trace/test_run_on_device.py \
  tests/trace/test_device_failures.py tests/trace/test_environment.py tests/trace/test_compile_limits.py > $OUT/more_tests.log 2>&1
LENS="tests/server/features/test_advisor.py::test_lens_hints_compare_and_quick_fix"
python3 -m pytest -p no:xdist -p no:cacheprovider -q -rs "$LENS" > $OUT/lens.log 2>&1
python3 -c "
import sys, jax, jax.numpy as jnp
x = jnp.ones((2048, 2048)); print('holder on', jax.devices()[0], flush=True)
n = 0
while True:
    x = jnp.tanh(x @ x); x.block_until_ready(); n += 1
    if n % 2000 == 0: print('holder steps', n, flush=True)
" > $OUT/holder.log 2>&1 &
HOLDER=$!
sleep 15
{
  python3 -m pytest -p no:xdist -p no:cacheprovider -q -rs "$LENS"
  echo "== trace jax101 (holder running)"; time python3 -m jax_lsp trace examples/jax101_policy_returns_none.py:7
  echo "== advise --run --compile (holder running)"
  time python3 -m jax_lsp advise tests/fixtures/advisor/peak_stack.py --example peak_stack.py:example --root tests/fixtures/advisor --run --compile --timeout 120
} > $OUT/busy.log 2>&1
kill $HOLDER; wait $HOLDER 2>/dev/null
{
  echo "== advise --run --compile (chip free)"
  time python3 -m jax_lsp advise tests/fixtures/advisor/peak_stack.py --example peak_stack.py:example --root tests/fixtures/advisor --run --compile --timeout 120
  time python3 -m jax_lsp advise tests/fixtures/advisor/peak_stack.py --example peak_stack.py:example --root tests/fixtures/advisor --run --compile --timeout 120 --output-format json
  echo "== left behind"; ps -eo pid,ppid,etime,args | grep -v grep | grep -E "python|agent" 
} > $OUT/free.log 2>&1
