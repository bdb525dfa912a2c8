#!/usr/bin/env bash
# The whole system on embedded defaults: installs what is missing, builds, starts a 3-broker
# Kafka cluster (librdkafka's mock cluster, real Kafka protocol on loopback), the coordinator,
# and a fleet of producer processes using the client library on a skewed workload, then shows
# live what happens on the brokers. Ctrl-C stops every process cleanly.
# --cluster: three coordinators in one consumer group (cluster mode, docs/CLUSTER.md) on a real
# Apache Kafka (3 KRaft nodes from Maven Central through scripts/kafka.sh; the mock cluster
# when no JDK can be had), producers on hotkey.transport=kafka; one coordinator is killed mid-run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

DURATION=75
PARTITIONS=32
PRODUCERS=4
WORKLOAD=flash
RATE=""  # 8000; 3000 with --cluster (three Kafka JVMs share this machine's cores)
BUILD=${HOTKEY_BUILD_DIR:-$ROOT/build}
SKIP_BUILD=${HOTKEY_SKIP_BUILD:-0}
PORT=""
CLUSTER=0

usage() {
  cat <<EOF
usage: scripts/demo.sh [options]

Runs the hot-key coordinator end to end on this machine and prints, every 2 s: per-partition
record rates read from the brokers, max/avg partition load before and after salting, the time
from the surge to salting in every producer, and the coordinator's hot keys with their salt
tables. The dashboard URL and the Kafka bootstrap address are printed at the start
(kcat -L -b <bootstrap> works while the demo runs).

options:
  --duration S      seconds the producers send (default $DURATION)
  --partitions N    partitions of the demo topic "orders" (default $PARTITIONS)
  --producers N     producer processes, each running the client library (default $PRODUCERS)
  --rate N          records/s of the whole fleet (default 8000; 3000 with --cluster, where
                    three Kafka nodes with replication factor 3 share this machine: the view
                    shows how far the brokers are behind the producers)
  --workload W      flash   Zipf(0.9) over 100k users; at 15 s one key (flash-0) surges to 45%
                            of traffic, at 45 s the surge moves to flash-1 (default)
                    hot90   one key carries 90% from 15 s on
                    zipf    Zipf(1.2) over 100k keys, no surge
                    moving  a hot set of 4 keys (50%) moving every 10 s, from 15 s on
  --port N          coordinator port (default: a free one; --cluster: the first of three)
  --cluster         cluster mode: 3 coordinators (hotkey-coordinator --kafka) in one consumer
                    group on a real Apache Kafka of 3 KRaft nodes (scripts/kafka.sh: a JDK and
                    Maven from Debian, the broker from Maven Central; the mock cluster when
                    they cannot be had), producers with hotkey.transport=kafka (reports
                    and lists over Kafka topics); at t=40 s the coordinator that owns
                    "orders" is killed with kill -9, the surge moves to a new key at t=45 s,
                    inside the ownership gap (a new owner takes over after the group's
                    session timeout, 15 s), and the producers salt it with local tables
  --build-dir DIR   build tree (default build/; env HOTKEY_BUILD_DIR)
  --no-build        use the binaries already built (env HOTKEY_SKIP_BUILD=1)
  -h, --help        this text
EOF
}

need_value() { [ $# -ge 2 ] || { echo "demo.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --duration) need_value "$@"; DURATION=$2; shift 2 ;;
    --partitions) need_value "$@"; PARTITIONS=$2; shift 2 ;;
    --producers) need_value "$@"; PRODUCERS=$2; shift 2 ;;
    --rate) need_value "$@"; RATE=$2; shift 2 ;;
    --workload) need_value "$@"; WORKLOAD=$2; shift 2 ;;
    --port) need_value "$@"; PORT=$2; shift 2 ;;
    --cluster) CLUSTER=1; shift ;;
    --build-dir) need_value "$@"; BUILD=$2; shift 2 ;;
    --no-build) SKIP_BUILD=1; shift ;;
    *) echo "demo.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
int_ok() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
int_ok "$DURATION" 5 86400 || { echo "demo.sh: --duration must be 5..86400 s" >&2; exit 2; }
int_ok "$PARTITIONS" 1 1000 || { echo "demo.sh: --partitions must be 1..1000" >&2; exit 2; }
int_ok "$PRODUCERS" 1 64 || { echo "demo.sh: --producers must be 1..64" >&2; exit 2; }
if [ -z "$RATE" ]; then
  if [ "$CLUSTER" = "1" ]; then RATE=3000; else RATE=8000; fi
fi
int_ok "$RATE" 1 1000000 || { echo "demo.sh: --rate must be 1..1000000" >&2; exit 2; }

SURGE_AT=15
case "$WORKLOAD" in
  flash) WL=(--keys 100000 --zipf 0.9 --hot-share 0.45 --hot-start $SURGE_AT --hot-move 30
             --hot-prefix flash-) ;;
  hot90) WL=(--keys 100000 --zipf 0 --hot-share 0.9 --hot-start $SURGE_AT --hot-prefix flash-) ;;
  zipf) WL=(--keys 100000 --zipf 1.2); SURGE_AT=-1 ;;
  moving) WL=(--keys 100000 --zipf 0 --hot-share 0.5 --hot-keys 4 --hot-start $SURGE_AT
              --hot-move 10 --hot-prefix flash-) ;;
  *) echo "demo.sh: unknown --workload '$WORKLOAD' (flash, hot90, zipf, moving)" >&2; exit 2 ;;
esac

if [ "$SKIP_BUILD" != "1" ]; then
  echo "== dependencies (scripts/deps.sh) =="
  scripts/deps.sh
  echo "== build ($BUILD) =="
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j"${HOTKEY_JOBS:-2}" --target hotkey-coordinator hotkey-mock-kafka \
    hotkey-watch hotkey-loadgen
fi
BIN=$BUILD/bin
for b in hotkey-coordinator hotkey-mock-kafka hotkey-watch hotkey-loadgen; do
  [ -x "$BIN/$b" ] || { echo "demo.sh: $BIN/$b is missing (build first)" >&2; exit 1; }
done
if ! grep -q 'hotkey)' <<<"$("$BIN/hotkey-loadgen" --help)"; then
  echo "demo.sh: this hotkey-loadgen was built without the client library" >&2
  exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hotkey-demo.XXXXXX")
PIDS=()
cleanup() {
  trap - EXIT INT TERM
  echo
  echo "== stopping =="
  # Producers first (they flush), then the coordinator, then the cluster.
  for ((i=${#PIDS[@]}-1; i>=0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "${KAFKA_DIR:-}" ] && scripts/kafka.sh stop "$KAFKA_DIR"
  echo "stopped; logs and the coordinator's data were in $WORK (removed)"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

REAL_KAFKA=0
if [ "$CLUSTER" = "1" ] && scripts/kafka.sh fetch >"$WORK/kafka-fetch.log" 2>&1; then
  REAL_KAFKA=1
fi
if [ "$REAL_KAFKA" = "1" ]; then
  echo "== Kafka: Apache Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' \
    tools/kafka/pom.xml), 3 KRaft nodes on loopback (scripts/kafka.sh), topic orders ($PARTITIONS partitions) =="
  # Stopped by cleanup, and by kafka.sh's watchdog should this script die first.
  scripts/kafka.sh start "$WORK/kafka" --nodes 3 --owner $$ >"$WORK/bootstrap"
  KAFKA_DIR="$WORK/kafka"
  # The coordinators create their own topics (CreateTopics); the data topic is made here.
  kafka_create() {  # topic partitions
    /usr/bin/python3 - "$(cat "$WORK/bootstrap")" "$1" "$2" <<'PY'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in admin.create_topics([NewTopic(sys.argv[2], int(sys.argv[3]), 3)]).values():
    f.result()
PY
  }
  kafka_create orders "$PARTITIONS"
else
  if [ "$CLUSTER" = "1" ]; then
    echo "demo.sh: no JDK or Maven for Apache Kafka ($WORK/kafka-fetch.log): using the mock cluster" >&2
  fi
  echo "== Kafka: librdkafka mock cluster, 3 brokers, topic orders ($PARTITIONS partitions) =="
  MOCK_TOPICS=(--topic "orders:$PARTITIONS")
  if [ "$CLUSTER" = "1" ]; then
    # The mock cluster has no CreateTopics: the internal topics are made here (docs/CLUSTER.md).
    MOCK_TOPICS+=(--topic __hotkey_reports:12 --topic __hotkey_lists:12 --topic __hotkey_state:1)
  fi
  "$BIN/hotkey-mock-kafka" --brokers 3 "${MOCK_TOPICS[@]}" \
    --bootstrap-file "$WORK/bootstrap" >"$WORK/mock-kafka.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do [ -s "$WORK/bootstrap" ] && break; sleep 0.1; done
  [ -s "$WORK/bootstrap" ] || { echo "demo.sh: the mock cluster did not start" >&2; exit 1; }
fi
BOOTSTRAP=$(cat "$WORK/bootstrap")
echo "bootstrap.servers=$BOOTSTRAP"
echo "  try, while the demo runs:  kcat -L -b $BOOTSTRAP"

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
if [ -z "$PORT" ]; then
  PORT=$(free_port)
fi
URL="http://127.0.0.1:$PORT"
wait_ready() {  # URL LOG
  for _ in $(seq 300); do curl -fs "$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "demo.sh: the coordinator at $1 did not become ready:" >&2; tail -5 "$2" >&2
  exit 1
}
if [ "$CLUSTER" = "1" ]; then
  echo "== 3 coordinators in cluster mode (consumer group hotkey.coordinators) =="
  COORD_URLS=()
  COORD_PIDS=()
  for i in 0 1 2; do
    if [ "$i" = "0" ]; then p=$PORT; else p=$(free_port); fi
    "$BIN/hotkey-coordinator" --listen "127.0.0.1:$p" --data "$WORK/coordinator-$i-data" \
      --kafka "$BOOTSTRAP" --kafka-set republish_interval_ms=5000 --kafka-set log_level=3 \
      >"$WORK/coordinator-$i.log" 2>&1 &
    PIDS+=($!)
    COORD_PIDS+=($!)
    COORD_URLS+=("http://127.0.0.1:$p")
  done
  for i in 0 1 2; do wait_ready "${COORD_URLS[i]}" "$WORK/coordinator-$i.log"; done
  for i in 0 1 2; do echo "coordinator $i: ${COORD_URLS[i]}/ (dashboard)"; done
  echo "members and owners: curl -s '$URL/v1/cluster'"
  VIEW_URLS=$(IFS=,; echo "${COORD_URLS[*]}")
else
  echo "== coordinator =="
  "$BIN/hotkey-coordinator" --listen "127.0.0.1:$PORT" --data "$WORK/coordinator-data" \
    >"$WORK/coordinator.log" 2>&1 &
  PIDS+=($!)
  wait_ready "$URL" "$WORK/coordinator.log"
  echo "dashboard:   $URL/"
  echo "hot keys:    curl -s '$URL/v1/hotkeys?topic=orders'"
  echo "metrics:     $URL/metrics"
  VIEW_URLS=$URL
fi

echo "== $PRODUCERS producers (client library, rekey mode), $RATE records/s in total, workload $WORKLOAD =="
mkdir -p "$WORK/status"
START_AT=$(( $(date +%s%3N) + 1500 ))
PER_RATE=$(( (RATE + PRODUCERS - 1) / PRODUCERS ))
if [ "$CLUSTER" = "1" ]; then
  TRANSPORT=(--transport kafka)
  echo "producers use hotkey.transport=kafka: reports to __hotkey_reports, lists from __hotkey_lists"
else
  TRANSPORT=(--coordinator "$URL")
fi
for i in $(seq 0 $((PRODUCERS - 1))); do
  "$BIN/hotkey-loadgen" --bootstrap "$BOOTSTRAP" --topic orders --strategy hotkey \
    "${TRANSPORT[@]}" --producer-id "demo-producer-$i" --rate "$PER_RATE" \
    --duration "$DURATION" --start-at-ms "$START_AT" --seed $((i + 1)) --value-bytes 16 \
    "${WL[@]}" \
    --status-file "$WORK/status/p$i.status" --json-out "$WORK/p$i.json" \
    >"$WORK/producer-$i.log" 2>&1 &
  PIDS+=($!)
done
[ "$SURGE_AT" -ge 0 ] && echo "the surge starts at t=${SURGE_AT}s; the broker view follows"

VIEW_ARGS=()
if [ "$CLUSTER" = "1" ]; then
  VIEW_ARGS=(--cluster)
  # Five seconds before the flash workload's surge moves (t=45 s): the producers find the list
  # stale 3 s after the owner's heartbeats stop, and the new key surges inside the ownership
  # gap, which lasts the group's session timeout (15 s) and a rebalance.
  KILL_AT=$(( SURGE_AT + 25 ))
  echo "at t=${KILL_AT}s the coordinator owning \"orders\" is killed with kill -9"
  [ "$WORKLOAD" = "flash" ] && [ "$DURATION" -gt 50 ] &&
    echo "at t=$(( SURGE_AT + 30 ))s the surge moves to flash-1, inside the ownership gap"
  (
    sleep_s=$(( (START_AT - $(date +%s%3N)) / 1000 + KILL_AT ))
    [ "$sleep_s" -gt 0 ] && sleep "$sleep_s"
    owner=$(curl -fs "$URL/v1/cluster" | /usr/bin/python3 -c \
      'import json,sys; print(json.load(sys.stdin).get("owners",{}).get("orders",""))' || true)
    for i in 0 1 2; do
      if [ "${COORD_URLS[i]}" = "$owner" ]; then
        echo "=== t=${KILL_AT}s: kill -9 coordinator $i ($owner), the owner of orders ==="
        kill -KILL "${COORD_PIDS[i]}" 2>/dev/null || true
      fi
    done
    [ -n "$owner" ] || echo "=== t=${KILL_AT}s: no owner of orders known yet; nothing killed ==="
  ) &
  PIDS+=($!)
fi

/usr/bin/python3 "$ROOT/tools/demo_view.py" --watch "$BIN/hotkey-watch" \
  --bootstrap "$BOOTSTRAP" --topic orders --coordinator "$VIEW_URLS" --status-dir "$WORK/status" \
  --producers "$PRODUCERS" --start-at-ms "$START_AT" "${VIEW_ARGS[@]}" || true

if [ "$CLUSTER" = "1" ]; then
  echo "== cluster after the run =="
  for u in "${COORD_URLS[@]}"; do
    curl -fs "$u/v1/cluster" | /usr/bin/python3 -c 'import json,sys
j = json.load(sys.stdin)
print(j.get("url"), "owns", sorted(t for t, o in j.get("owners", {}).items() if o == j.get("url")))' \
      2>/dev/null || echo "$u not answering (killed)"
  done
fi
echo "== final hot keys =="
for u in ${VIEW_URLS//,/ }; do
  curl -fs "$u/v1/hotkeys?topic=orders" | /usr/bin/python3 -m json.tool | head -40 && break
done || true
