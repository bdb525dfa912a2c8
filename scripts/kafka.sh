#!/usr/bin/env bash
# A real Apache Kafka (KRaft, on loopback) for the tests, `scripts/demo.sh --cluster` and the
# benchmarks. The broker comes from Maven Central through tools/kafka/pom.xml (pinned version);
# nothing is downloaded by hand.
#
#   scripts/kafka.sh fetch                 resolve the broker's jars (once; cached), print the dir
#   scripts/kafka.sh start DIR [options]   format and start a cluster in DIR, wait until every
#                                          node serves metadata, print the bootstrap servers
#       --nodes N          nodes (each broker + controller; default 1). N >= 3 gets replication
#                          factor 3 and min.insync.replicas=2 for every topic by default
#       --owner PID        stop the cluster when process PID ends (tests pass their own pid,
#                          so a test killed by a timeout leaves no JVM behind)
#       --set KEY=VALUE    a broker setting added to (or replacing) the defaults below
#   scripts/kafka.sh stop DIR              kill every node of DIR's cluster (its data is throwaway)
#   scripts/kafka.sh kill-node DIR I       kill -9 node I (0-based)
#   scripts/kafka.sh start-node DIR I      start node I again on its data and ports, wait for it
#   scripts/kafka.sh bootstrap DIR         print the cluster's bootstrap servers
#   scripts/kafka.sh controller DIR        print the index I of the node that is the active
#                                          controller (the KRaft quorum's leader)
#
#   Node I (0-based) has node.id I+1 (the id Kafka's metadata, leaders and the group
#   coordinator name) and two ports: the broker's (PLAINTEXT, DIR/node-I/port, in the
#   bootstrap) and the controller's; its log is DIR/node-I/node.log.
#
#   HOTKEY_KAFKA_VERSION   another Kafka version than the pom's
#   HOTKEY_KAFKA_CACHE     where the jars are kept (default ~/.cache/hotkey)
#   HOTKEY_KAFKA_HEAP      heap per node (default 768m)
#   HOTKEY_KAFKA_JVM_OPTS  heap and GC flags replacing the defaults below, e.g. Kafka's own
#                          (kafka-server-start.sh): "-Xms1g -Xmx1g -XX:+UseG1GC
#                          -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POM="$ROOT/tools/kafka/pom.xml"
VERSION=${HOTKEY_KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")}
CACHE=${HOTKEY_KAFKA_CACHE:-$HOME/.cache/hotkey}
LIB="$CACHE/kafka-$VERSION/lib"
HEAP=${HOTKEY_KAFKA_HEAP:-768m}

die() { echo "kafka.sh: $*" >&2; exit 1; }

ensure_tools() {
  local missing=()
  command -v java >/dev/null 2>&1 || missing+=(default-jdk-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  command -v kcat >/dev/null 2>&1 || missing+=(kcat)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "kafka.sh: installing ${missing[*]}" >&2
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
}

fetch() {
  if [ -f "$LIB/.complete" ]; then echo "$LIB"; return 0; fi
  ensure_tools
  echo "kafka.sh: resolving Apache Kafka $VERSION from Maven Central into $LIB" >&2
  local tmp="$LIB.tmp.$$"
  rm -rf "$tmp"
  mvn -q -B -f "$POM" -Dkafka.version="$VERSION" dependency:copy-dependencies \
    -DoutputDirectory="$tmp" -DincludeScope=runtime >&2 ||
    die "mvn could not resolve org.apache.kafka:kafka_2.13:$VERSION (see above)"
  mkdir -p "$(dirname "$LIB")"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  touch "$LIB/.complete"
  echo "$LIB"
}

# SerialGC and a small heap: up to three nodes share a 2-core machine with the code under test.
# The simple SLF4J binding logs WARN and above to the node's log file.
read -r -a JVM_OPTS <<<"${HOTKEY_KAFKA_JVM_OPTS:-"-Xms64m -Xmx$HEAP -XX:+UseSerialGC"}"
JAVA=(java "${JVM_OPTS[@]}" -XX:+ExitOnOutOfMemoryError
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true
  -cp "$LIB/*")

free_ports() {  # count
  # Below the kernel's ephemeral range, so that no client connection (tests open many) can take
  # a port between this pick and the broker's bind.
  python3 - "$1" <<'EOF'
import random, socket, sys
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
socks = []
while len(socks) < int(sys.argv[1]):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(10000, min(lo, 32768))))
        socks.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

node_pid() { cat "$1/node-$2/pid" 2>/dev/null || true; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

launch_node() {  # dir, index
  local dir=$1 i=$2 nd="$1/node-$2"
  # setsid: the node is not in the caller's process group, so a test runner's group signals
  # reach it only through stop (the owner watchdog); stdin/out/err never hold the caller's pipes.
  setsid "${JAVA[@]}" kafka.Kafka "$nd/server.properties" \
    </dev/null >>"$nd/node.log" 2>&1 &
  echo $! >"$nd/pid"
}

brokers_up() {  # bootstrap -> number of brokers in the metadata
  kcat -b "$1" -L -m 2 2>/dev/null | sed -n 's/^ *\([0-9]*\) brokers:$/\1/p' | head -1
}

wait_ready() {  # dir, nodes, [node index whose port to ask]
  local dir=$1 n=$2 ask=${3:-} deadline=$((SECONDS + 90)) bs
  bs=$(cat "$dir/bootstrap")
  [ -n "$ask" ] && bs="127.0.0.1:$(cat "$dir/node-$ask/port")"
  while [ $SECONDS -lt $deadline ]; do
    if [ "$(brokers_up "$bs")" = "$n" ]; then return 0; fi
    for ((i = 0; i < n; i++)); do
      local pid; pid=$(node_pid "$dir" "$i")
      if [ -n "$pid" ] && ! alive "$pid"; then
        # A port taken since it was picked: the caller starts again on other ports.
        grep -q "Address already in use" "$dir/node-$i/node.log" && return 3
        tail -n 30 "$dir/node-$i/node.log" >&2
        die "node $i exited during start (log: $dir/node-$i/node.log)"
      fi
    done
    sleep 0.2
  done
  die "the cluster in $dir did not serve metadata with $n brokers within 90 s"
}

start() {
  local dir="" nodes=1 owner="" sets=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes=$2; shift 2 ;;
      --owner) owner=$2; shift 2 ;;
      --set) sets+=("$2"); shift 2 ;;
      -*) die "unknown option $1" ;;
      *) [ -z "$dir" ] || die "one DIR only"; dir=$1; shift ;;
    esac
  done
  [ -n "$dir" ] || die "usage: kafka.sh start DIR [--nodes N] [--owner PID] [--set K=V]..."
  [[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes takes 1-9"
  fetch >/dev/null
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/bootstrap" ] || die "$dir already holds a cluster (kafka.sh stop $dir first)"
  if [ -n "$owner" ]; then
    # The watchdog stops the cluster once its owner is gone (a stop before that leaves it
    # nothing to do).
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; "$3" stop "$2"' \
      _ "$owner" "$dir" "$ROOT/scripts/kafka.sh" </dev/null >/dev/null 2>&1 &
  fi
  local attempt rc
  for attempt in 1 2 3; do
    rc=0
    start_once "$dir" "$nodes" "${sets[@]+"${sets[@]}"}" || rc=$?
    [ $rc -eq 3 ] || break
    echo "kafka.sh: a port was taken during start; starting again on other ports" >&2
    stop "$dir"
    rm -rf "$dir"/node-*
  done
  [ $rc -eq 0 ] || die "could not start the cluster in $dir"
  cat "$dir/bootstrap"
}

start_once() {  # dir, nodes, settings...
  local dir=$1 nodes=$2; shift 2
  local sets=("$@")
  local ports; read -r -a ports <<<"$(free_ports $((2 * nodes)))"
  local voters="" bootstrap="" rf=1 isr=1
  [ "$nodes" -ge 3 ] && rf=3 && isr=2
  for ((i = 0; i < nodes; i++)); do
    voters+="${voters:+,}$((i + 1))@127.0.0.1:${ports[$((2 * i + 1))]}"
    bootstrap+="${bootstrap:+,}127.0.0.1:${ports[$((2 * i))]}"
  done
  local cluster_id
  # Kafka's cluster id: a UUID in URL-safe base64, not starting with '-' (the format tool would
  # take it for an option).
  cluster_id=$(python3 -c 'import base64,uuid
while True:
    i = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if i[0] != "-": break
print(i)')
  for ((i = 0; i < nodes; i++)); do
    local nd="$dir/node-$i"
    mkdir -p "$nd"
    echo "${ports[$((2 * i))]}" >"$nd/port"
    {
      echo "process.roles=broker,controller"
      echo "node.id=$((i + 1))"
      echo "controller.quorum.voters=$voters"
      echo "listeners=PLAINTEXT://127.0.0.1:${ports[$((2 * i))]},CONTROLLER://127.0.0.1:${ports[$((2 * i + 1))]}"
      echo "advertised.listeners=PLAINTEXT://127.0.0.1:${ports[$((2 * i))]}"
      echo "controller.listener.names=CONTROLLER"
      echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
      echo "inter.broker.listener.name=PLAINTEXT"
      echo "log.dirs=$nd/data"
      # Kafka's own thread counts: idle threads cost nothing, and with 2 network and 2 I/O
      # threads 100 subscribers' fetches waited their turn (fan-out p50 256 ms against 25 ms,
      # docs/BENCHMARKS.md "List fan-out through Kafka").
      echo "num.partitions=1"
      echo "default.replication.factor=$rf"
      echo "min.insync.replicas=$isr"
      echo "offsets.topic.replication.factor=$rf"
      echo "offsets.topic.num.partitions=4"
      echo "transaction.state.log.replication.factor=$rf"
      echo "transaction.state.log.min.isr=$isr"
      echo "transaction.state.log.num.partitions=4"
      echo "group.initial.rebalance.delay.ms=0"
      echo "group.min.session.timeout.ms=1000"
      # Topics are created on purpose (the coordinator's CreateTopics, the tests' admin calls),
      # never by a client's metadata request.
      echo "auto.create.topics.enable=false"
      # Compaction that a test can watch: the cleaner checks every second.
      echo "log.cleaner.backoff.ms=1000"
      echo "log.retention.check.interval.ms=5000"
      for s in "${sets[@]+"${sets[@]}"}"; do echo "$s"; done
    } >"$nd/server.properties"
  done
  echo "$bootstrap" >"$dir/bootstrap"
  # Format every node's log dir at once (one JVM start each, in parallel).
  local fpids=()
  for ((i = 0; i < nodes; i++)); do
    local nd="$dir/node-$i"
    "${JAVA[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$nd/server.properties" \
      >"$nd/format.log" 2>&1 &
    fpids+=($!)
  done
  for ((i = 0; i < nodes; i++)); do
    wait "${fpids[$i]}" || { cat "$dir/node-$i/format.log" >&2; die "format of node $i failed"; }
  done
  for ((i = 0; i < nodes; i++)); do launch_node "$dir" "$i"; done
  echo "$nodes" >"$dir/nodes"
  wait_ready "$dir" "$nodes"
}

stop() {  # every node is killed at once: a cluster of this script holds only throwaway data
  local dir=$1
  [ -d "$dir" ] || return 0
  for nd in "$dir"/node-*; do
    [ -d "$nd" ] || continue
    local pid; pid=$(cat "$nd/pid" 2>/dev/null || true)
    if alive "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      while alive "$pid"; do sleep 0.05; done
    fi
  done
  rm -f "$dir/bootstrap"
}

case "${1:-}" in
  fetch) fetch ;;
  start) shift; start "$@" ;;
  stop) [ $# -eq 2 ] || die "usage: kafka.sh stop DIR"; stop "$2" ;;
  kill-node)
    [ $# -eq 3 ] || die "usage: kafka.sh kill-node DIR I"
    pid=$(node_pid "$2" "$3"); alive "$pid" && kill -KILL "$pid"
    while alive "$pid"; do sleep 0.05; done ;;
  start-node)
    [ $# -eq 3 ] || die "usage: kafka.sh start-node DIR I"
    alive "$(node_pid "$2" "$3")" && die "node $3 is running"
    launch_node "$2" "$3"
    wait_ready "$2" "$(cat "$2/nodes")" "$3" ;;
  bootstrap) cat "$2/bootstrap" ;;
  controller)
    [ $# -eq 2 ] || die "usage: kafka.sh controller DIR"
    id=$(java -cp "$LIB/*" -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
      "$ROOT/tools/kafka/QuorumLeader.java" "$(cat "$2/bootstrap")") ||
      die "the quorum of $2 could not be described"
    echo $((id - 1)) ;;
  *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ] && exit 2 || exit 0 ;;
esac
