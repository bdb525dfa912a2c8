#!/usr/bin/env bash
# Runs the dashboard's browser tests (tests/browser, node:test + playwright-core) for ctest.
# Exits 77 (ctest: skipped) with a clear message only when Node.js or Chromium truly cannot
# run here; every other problem is a failure.
#
#   run_browser_tests.sh SOURCE_DIR BIN_DIR ARTIFACTS_DIR
set -uo pipefail
SRC=$1
# Absolute paths: the tests run from tests/browser.
export HOTKEY_BIN_DIR=$(realpath -m "$2")
export HOTKEY_ARTIFACTS_DIR=$(realpath -m "${HOTKEY_ARTIFACTS_DIR:-$3}")
export HOTKEY_CHROMIUM=${HOTKEY_CHROMIUM:-/usr/bin/chromium}
PROJECT=$(cd "$SRC/tests/browser" && pwd) || exit 1

skip() {
  echo "SKIPPED browser tests: $*"
  exit 77
}

command -v node >/dev/null 2>&1 || skip "node is not installed (scripts/deps.sh --browser installs it)"
[ -x "$HOTKEY_CHROMIUM" ] ||
  skip "$HOTKEY_CHROMIUM is missing (scripts/deps.sh --browser installs Debian's chromium)"
node -e 'const [a]=process.versions.node.split(".");process.exit(+a>=20?0:1)' ||
  skip "node $(node --version) is too old for playwright-core (needs >= 20)"

# playwright-core at the version package-lock.json pins. npm ci wipes node_modules first, so
# it only runs when the installed copy differs; offline with nothing installed means skip.
want=$(node -p 'require(process.argv[1]).packages["node_modules/playwright-core"].version' \
  "$PROJECT/package-lock.json")
have=$(node -p 'require(process.argv[1]).version' \
  "$PROJECT/node_modules/playwright-core/package.json" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  command -v npm >/dev/null 2>&1 || skip "npm is not installed"
  if ! npm ci --prefix "$PROJECT" --no-audit --no-fund --loglevel=error; then
    [ -d "$PROJECT/node_modules/playwright-core" ] ||
      skip "npm ci could not install playwright-core@$want (no registry access?)"
  fi
fi

# Can Chromium start at all on this machine? (Not a test of ours: a precondition.)
cd "$PROJECT" || exit 1
if ! smoke=$(node smoke.mjs 2>&1); then
  skip "headless Chromium cannot start here: $smoke"
fi

mkdir -p "$HOTKEY_ARTIFACTS_DIR"
exec node --test --test-concurrency=1 --test-timeout=120000 dashboard.test.mjs
