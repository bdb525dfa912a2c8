#!/usr/bin/env bash
# Side-by-side partition balance benchmark (issue 5): naive hashing, static random salting,
# per-process adaptive salting and this project, on the same workloads and the same mock
# Kafka cluster, measured from the records on the brokers. See docs/BENCHMARKS.md ("Balance").
#
#   scripts/bench.sh                 full run (8 scenarios x 4 strategies, ~15 min on 2 cores)
#   scripts/bench.sh --quick         reduced set for CI (3 scenarios, 3-5 min)
#   scripts/bench.sh --scenarios hot90,zipf1.2 --strategies naive,hotkey
#   scripts/bench.sh --out DIR       where results.json, results.md, balance.png go
#                                    (default build/bench-balance)
#   HOTKEY_BUILD_DIR=DIR             build tree to use (default build)
#   HOTKEY_SKIP_BUILD=1              use the binaries already built (CI, tests)
# Any other option is passed to bench/balance/balance_bench.py (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
COMMAND="scripts/bench.sh${*:+ $*}"
BUILD=${HOTKEY_BUILD_DIR:-$ROOT/build}
OUT=""
PASS=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      /usr/bin/python3 bench/balance/balance_bench.py --help | sed -n '/^options/,$p'
      exit 0 ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    *) PASS+=("$1"); shift ;;
  esac
done
OUT=${OUT:-$BUILD/bench-balance}

if [ "${HOTKEY_SKIP_BUILD:-0}" != "1" ]; then
  scripts/deps.sh
  # The PNG chart needs matplotlib; everything else works without it.
  if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      python3-matplotlib >/dev/null || echo "bench.sh: no matplotlib; the PNG chart is skipped"
  fi
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j"${HOTKEY_JOBS:-2}" --target hotkey-mock-kafka hotkey-watch \
    hotkey-loadgen hotkey-coordinator
fi

exec /usr/bin/python3 bench/balance/balance_bench.py --bindir "$BUILD/bin" --out "$OUT" \
  --command "$COMMAND" "${PASS[@]}"
