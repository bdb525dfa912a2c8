#!/usr/bin/env bash
# CPU of an idle coordinator in cluster mode, by thread name (docs/BENCHMARKS.md "Cluster mode
# on a real broker", "An idle coordinator"):
#   bench/idle_coordinator_cpu.sh BOOTSTRAP FENCING [LIBRDKAFKA_SO]
# Starts build/bin/hotkey-coordinator alone against BOOTSTRAP (a broker from
# `scripts/kafka.sh start DIR`) with its own group and topics (12 partitions, replication
# factor 1, kafka.lists_fencing FENCING: 0 or 1), waits SETTLE seconds (default 40), then sums
# bench/thread_wakeups.sh over SECONDS (default 60) by thread name. LIBRDKAFKA_SO: run the
# coordinator on that librdkafka.so.1 instead of the system's (e.g. the PyPI wheel's, in
# build/plugin-pypi-venv/lib/python3.11/site-packages/confluent_kafka.libs/); the library the
# process mapped is printed.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
bootstrap=$1 fencing=$2 lib=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
settle=${SETTLE:-40} seconds=${SECONDS_MEASURED:-60}
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
env_lib=()
if [ -n "$lib" ]; then
  mkdir "$work/lib" && ln -s "$(readlink -f "$lib")" "$work/lib/librdkafka.so.1"
  env_lib=(LD_LIBRARY_PATH="$work/lib")
fi
tag=idle$$
echo "{\"kafka\": {\"replication_factor\": 1, \"lists_fencing\": $fencing}}" >"$work/conf.json"
env "${env_lib[@]}" "$root/build/bin/hotkey-coordinator" --kafka "$bootstrap" --group "$tag" \
  --lists-topic "$tag.lists" --reports-topic "$tag.reports" --state-topic "$tag.state" \
  --listen 127.0.0.1:0 --data "$work/data" --config "$work/conf.json" >"$work/log" 2>&1 &
pid=$!
sleep "$settle"
kill -0 "$pid" 2>/dev/null || { echo "the coordinator exited:" >&2; tail -3 "$work/log" >&2; exit 1; }
echo "librdkafka: $(grep -o '/[^ ]*librdkafka[^ ]*' /proc/$pid/maps | sort -u | head -1)"
echo "threads: $(ls /proc/$pid/task | wc -l), lists_fencing $fencing, over ${seconds} s:"
"$root/bench/thread_wakeups.sh" "$pid" "$seconds" >"$work/threads"
awk '{n[$1]++; c[$1] += $5; w[$1] += $8}
     END {for (k in n) printf "  %-18s x%-3d cpu %6.2f ms/s  wake-ups %7.1f /s\n", k, n[k], c[k], w[k]}' \
  "$work/threads" | sort -k4 -nr
awk '{c += $5} END {printf "  total              cpu %6.2f ms/s\n", c}' "$work/threads"
