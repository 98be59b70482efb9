#!/usr/bin/env bash
# Both ends of the supported JAX range (the first and last releases of jax_lsp/core/jax_facts.json):
# a venv per end holding only that JAX (the oldest under Python 3.11 or 3.10, the newest under
# 3.12+), then, with the trace agent and the rules' example proofs in that venv
# (JAX_LSP_TEST_INTERPRETER), the trace tests, the example proofs, and `jax-lsp check --trace` on
# a copy of examples/ (no internal error). The tests themselves run in the active environment
# (.ci/run's .venv). An end whose Python is missing is skipped with a line saying so.
#
#   bash .ci/jax_ends.sh            # both ends
#   bash .ci/jax_ends.sh oldest     # one of them
set -euo pipefail
cd "$(dirname "$0")/.."
venvs=${JAX_ENDS_VENVS:-$PWD/.ci/cache/jax-venvs}
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$PWD/.ci/cache/pip}

# A working `pythonX.Y`: on PATH (a pyenv shim there counts only if it runs), else the newest
# pyenv version X.Y.* (`PYENV_VERSION=X.Y.Z pyenv which pythonX.Y`).
find_python() {
  local minor=$1 found version
  if found=$(command -v "python$minor") && found=$("$found" -c 'import sys; print(sys.executable)' 2>/dev/null); then
    echo "$found"
    return
  fi
  command -v pyenv >/dev/null || return 0
  for version in $(pyenv versions --bare | grep -E "^${minor//./\\.}\.[0-9]+$" | sort -t. -k3,3nr); do
    if found=$(PYENV_VERSION=$version pyenv which "python$minor" 2>/dev/null); then
      echo "$found"
      return
    fi
  done
}

read -r oldest newest < <(python - <<'EOF'
import json
releases = json.load(open("jax_lsp/core/jax_facts.json", encoding="utf-8"))["releases"]
print(releases[0], releases[-1])
EOF
)

# The tests that trace in JAX_LSP_TEST_INTERPRETER (tests/agent.py's AGENT_PYTHON): the trace's
# host and agent, `trace`, `check --trace` and the editor's trace on top of them, and the
# advisor's agent (those comparing with this Python's own JAX, or advising flax or equinox code
# that the end's venv lacks, skip there).
TRACE_TESTS=(tests/trace tests/trace_agent/test_load.py tests/cli/commands/test_trace.py
  tests/cli/test_tracing.py tests/server/features/test_trace.py tests/trace_agent/advisor)

# end NAME RELEASE PYTHON...: the venv for RELEASE under the first of the Pythons found, and the
# tests under it.
end() {
  local name=$1 release=$2 python="" minor venv started
  shift 2
  for minor in "$@"; do
    python=$(find_python "$minor")
    [ -n "$python" ] && break
  done
  if [ -z "$python" ]; then
    echo "jax_ends: SKIPPED the $name end (jax $release): no Python $* found on PATH or in pyenv"
    return 0
  fi
  started=$SECONDS
  venv=$venvs/jax-$release
  if ! ls "$venv"/lib/python*/site-packages/jax-"$release".dist-info >/dev/null 2>&1; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "jax[cpu]==$release"
  fi
  echo "jax_ends: the $name end, jax $release in $venv ($("$venv/bin/python" -V)), ready in $((SECONDS - started)) s"
  JAX_LSP_TEST_INTERPRETER=$venv/bin/python python -m pytest -q -p no:cacheprovider "${TRACE_TESTS[@]}" \
    tests/rules/test_examples.py::test_invalid_example_fails_under_jax \
    tests/rules/test_examples.py::test_fixed_example_runs_under_jax \
    tests/rules/test_examples.py::test_valid_example_runs_under_jax
  local copy
  copy=$(mktemp -d)
  cp -r examples "$copy/"
  # Findings exit 1; an internal error of the trace, or a trace that could not run, must not appear.
  (cd "$copy/examples" && python -m jax_lsp check --trace --no-cache --interpreter "$venv/bin/python" \
      --output-format concise . >"$copy/out.txt" 2>&1) || [ $? -eq 1 ]
  if grep -E "Internal error|Traceback|Trace failed" "$copy/out.txt"; then
    echo "jax_ends: check --trace on the examples failed under jax $release"
    exit 1
  fi
  if ! grep -q "Confirmed by trace (jax $release" "$copy/out.txt"; then
    echo "jax_ends: check --trace on the examples confirmed nothing under jax $release:"
    cat "$copy/out.txt"
    exit 1
  fi
  rm -rf "$copy"
  echo "jax_ends: the $name end, jax $release: passed in $((SECONDS - started)) s"
}

case "${1:-both}" in
  oldest) end oldest "$oldest" 3.11 3.10 ;;
  newest) end newest "$newest" 3.12 3.13 ;;
  both)
    end oldest "$oldest" 3.11 3.10
    end newest "$newest" 3.12 3.13
    ;;
  *) echo "usage: $0 [oldest|newest|both]" >&2; exit 2 ;;
esac
