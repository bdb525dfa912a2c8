#!/usr/bin/env bash
# Java fleets side by side on a real Kafka broker (issue 28; docs/BENCHMARKS.md "Java client"):
# the C++ fleet, the Java fleet and a naive Java fleet on one key at 40% of a 24-partition topic,
# and a mixed fleet (C++ library, Java library, Python through the librdkafka plugin) against a
# naive mixed fleet. Prints max/avg of the records per partition on the broker for each.
#
#   scripts/java-fleet-bench.sh                       both scenarios (~3 min: 30 s each, plus broker start)
#   scripts/java-fleet-bench.sh --scenarios fleet     one of fleet, mixed
#   scripts/java-fleet-bench.sh --out DIR             results.json, results.md (default
#                                                     build/bench-java-fleet)
#   HOTKEY_BUILD_DIR=DIR                              build tree (default build)
#   HOTKEY_SKIP_BUILD=1                               use what is built already
# Any other option goes to bench/fleet/fleet_bench.py (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
COMMAND="scripts/java-fleet-bench.sh${*:+ $*}"
BUILD=${HOTKEY_BUILD_DIR:-$ROOT/build}
OUT=""
PASS=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    *) PASS+=("$1"); shift ;;
  esac
done
OUT=${OUT:-$BUILD/bench-java-fleet}

if [ "${HOTKEY_SKIP_BUILD:-0}" != "1" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j"${HOTKEY_JOBS:-2}" --target hotkey-coordinator hotkey-loadgen \
    hotkey-watch hotkey_rdkafka_plugin
  (cd client/java && mvn -q -B install -DskipTests)
  (cd client/java/bench && mvn -q -B compile dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt)
fi
CP="$ROOT/client/java/bench/target/classes:$(cat client/java/bench/target/classpath.txt)"
exec /usr/bin/python3 bench/fleet/fleet_bench.py --bindir "$BUILD/bin" --java-cp "$CP" \
  --plugin "$BUILD/lib/libhotkey-rdkafka.so" --out "$OUT" --command "$COMMAND" "${PASS[@]}"
