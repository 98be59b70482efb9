#!/usr/bin/env bash
# Compiling for a TPU without one (`jax-lsp advise --target v5e-1`): a venv holding `jax[tpu]`
# (JAX and its libtpu, about 700 MB; Linux x86-64 only), in which the trace agent runs for the
# tests of tests/trace_agent/advisor/test_target.py and the editor's, and the busy-chip tests
# (JAX_LSP_LIBTPU_PYTHON): each figure equals a direct `jax.experimental.topologies`
# compile done in the test. libtpu stays out of the
# suite's own venv (.ci/run's .venv), where every JAX start-up that does not pin the CPU would
# try the TPU first (about 4 s and logged errors a process). The tests themselves run in the
# active environment. On another platform the run is skipped with a line saying so.
#
#   bash .ci/libtpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "libtpu: SKIPPED: libtpu is built for Linux x86-64 only, this is $(uname -s)-$(uname -m)"
  exit 0
fi
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$PWD/.ci/cache/pip}
# The release of JAX the suite's venv holds, so that the test's direct compile and the agent's agree.
release=$(python -c 'import jax; print(jax.__version__)')
venv=${LIBTPU_VENV:-$PWD/.ci/cache/libtpu-venv}
started=$SECONDS
if ! ls "$venv"/lib/python*/site-packages/jax-"$release".dist-info >/dev/null 2>&1 \
    || ! ls -d "$venv"/lib/python*/site-packages/libtpu >/dev/null 2>&1; then
  rm -rf "$venv"
  python -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "jax[tpu]==$release"
fi
echo "libtpu: jax $release with libtpu in $venv, ready in $((SECONDS - started)) s"
JAX_LSP_LIBTPU_PYTHON=$venv/bin/python JAX_LSP_EXPECT_LIBTPU=1 \
  python -m pytest -q -p no:cacheprovider tests/trace_agent/advisor/test_target.py \
  tests/server/features/test_advisor_target.py tests/trace/test_device_failures.py \
  tests/trace/test_run_on_device.py
echo "libtpu: passed in $((SECONDS - started)) s"
