#!/usr/bin/env python3
"""Side-by-side partition balance benchmark (issue 5), driven by scripts/bench.sh.

For every scenario it starts one librdkafka mock cluster (3 brokers, real Kafka protocol on
loopback) and one hotkey-coordinator, then runs each strategy in turn on its own topic of that
cluster with the same fleet of hotkey-loadgen producer processes and the same workload seeds.
Balance is measured from the brokers' end offsets (hotkey-watch --once --json) over a steady
window; salting, detection times and throughput come from the producers' JSON summaries.

Writes results.json, results.md and (when matplotlib is available) balance.png to --out.
"""

import argparse
import json
import math
import random
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

STRATEGIES = ["naive", "static", "adaptive", "hotkey"]
# Variants of the hotkey strategy, run only when named in --strategies (same coordinator, own
# topic): the same client with these extra client properties, for before/after comparisons in
# one run.
VARIANTS = {
    "hotkey_nosurge": ["hotkey.surge.interval.ms=0"],
    "hotkey_noheaders": ["hotkey.salt.headers=false"],
    "hotkey_rate1": ["hotkey.sample.rate=1"],
    "hotkey_noheaders_rate1": ["hotkey.salt.headers=false", "hotkey.sample.rate=1"],
    # Local tables off: what the client did before them (a stale list routes as it is).
    "hotkey_nolocal": ["hotkey.list.stale.ms=0"],
}
LABELS = {
    "naive": "naive murmur2",
    "static": "static whitelist, 8 random salts",
    "adaptive": "per-process adaptive, 8 round-robin salts",
    "hotkey": "hotkey (fleet-wide coordinator)",
    "hotkey_nosurge": "hotkey without surge reports (hotkey.surge.interval.ms=0)",
    "hotkey_noheaders": "hotkey without salt headers (hotkey.salt.headers=false)",
    "hotkey_rate1": "hotkey sampling every record (hotkey.sample.rate=1)",
    "hotkey_noheaders_rate1": "hotkey without salt headers, sampling every record",
    "hotkey_nolocal": "hotkey without local tables (hotkey.list.stale.ms=0)",
}


def is_hotkey(strategy):
    return strategy == "hotkey" or strategy in VARIANTS

# Scenario fields: partitions, producers, total fleet rate (records/s), duration and
# measurement window start (s into the run), the workload flags every producer gets, and the
# static strategy's whitelist (what an operator would have listed before the run).
UNIFORM_100K = ["--keys", "100000", "--zipf", "0"]
# Surges start HOT_START s into the run, on a topic that already carries traffic (as a flash
# sale does); the steady window opens WINDOW s in, leaving each strategy time to react.
HOT_START = "4"
# Small values: partition balance does not depend on them, and the mock cluster keeps only
# 5 MB per partition, which the tailing window counter must read before it is dropped.
VALUE_BYTES = 16
SCENARIOS = {
    "hot90": dict(
        title="one key 90%, 12 partitions", partitions=12, producers=4, rate=16000,
        duration=16, window=7, saturation=True,
        workload=UNIFORM_100K + ["--hot-share", "0.9", "--hot-start", HOT_START,
                                 "--hot-prefix", "book-"],
        whitelist=["book-0"]),
    "seller45": dict(
        title="one seller 45%, 64 partitions, 16 producers", partitions=64, producers=16,
        rate=16000, duration=16, window=7,
        workload=UNIFORM_100K + ["--hot-share", "0.45", "--hot-start", HOT_START,
                                 "--hot-prefix", "seller-"],
        whitelist=["seller-0"]),
    "tenants5": dict(
        title="5 tenants, 32 partitions", partitions=32, producers=4, rate=16000, duration=16,
        window=7, workload=["--keys", "5", "--zipf", "1.0", "--key-prefix", "tenant-"],
        whitelist=["tenant-0"]),
    "moving": dict(
        title="hot set of 4 keys (50%) moving every 10 s, 32 partitions", partitions=32,
        producers=4, rate=16000, duration=40, window=7,
        workload=UNIFORM_100K + ["--hot-share", "0.5", "--hot-keys", "4", "--hot-start",
                                 HOT_START, "--hot-move", "10", "--hot-prefix", "trend-"],
        whitelist=["trend-0", "trend-1", "trend-2", "trend-3"]),
}
for z in ("0.8", "1.0", "1.2", "1.5"):
    SCENARIOS[f"zipf{z}"] = dict(
        title=f"Zipf {z}, 100k keys, 32 partitions", partitions=32, producers=4, rate=16000,
        duration=16, window=7, workload=["--keys", "100000", "--zipf", z],
        whitelist=["user-0"])
# A coordinator outage (issue 37): the coordinator is killed with kill -9 `kill_at` s into each
# strategy's run (every hotkey strategy gets a coordinator of its own) and not brought back; a
# key surges to half the records `hot_start` s in, after the producers' lists went stale
# (hotkey.list.stale.ms, 3 s by default), and the window (from 1 s after the surge to the end)
# lies wholly in the outage. Not in FULL: run it with --scenarios outage.
SCENARIOS["outage"] = dict(
    title="coordinator killed at 4 s, one key 50% from 8 s, 12 partitions", partitions=12,
    producers=4, rate=8000, duration=20, window=9, kill_at=4,
    workload=UNIFORM_100K + ["--hot-share", "0.5", "--hot-start", "8", "--hot-prefix", "flash-"],
    whitelist=["flash-0"])
FULL = ["hot90", "seller45", "tenants5", "zipf0.8", "zipf1.0", "zipf1.2", "zipf1.5", "moving"]
QUICK = ["hot90", "seller45", "moving"]
QUICK_OVERRIDES = dict(duration=13, window=8)
# Per scenario in --quick: the moving set runs one move in its window (the one at 14 s, then
# 8 s to balance its transient out) and only this project's strategy (the comparison with
# naive is in the two scenarios before it), to keep CI short.
QUICK_SCENARIO = {"moving": dict(duration=22, window=12, strategies=["hotkey"])}
# Saturation: one producer, no rate limit, the same workload; what the producer can push.
SATURATION_S = 5


class Fleet:
    """Every child process of a run; stops them all (SIGTERM, then SIGKILL) on the way out."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, timeout=10):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.procs:
            self.procs.remove(p)

    def stop_all(self):
        for p in reversed(list(self.procs)):
            self.stop(p)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def topic_version(url, topic):
    try:
        with urllib.request.urlopen(f"{url}/v1/topics/{topic}", timeout=5) as r:
            return json.load(r).get("version")
    except (urllib.error.URLError, OSError, ValueError):
        return None


def listed_by_source(url, topic):
    """How many keys the topic's current list salts, by why (source)."""
    try:
        with urllib.request.urlopen(f"{url}/v1/hotkeys?topic={topic}", timeout=5) as r:
            keys = json.load(r).get("keys", [])
    except (urllib.error.URLError, OSError, ValueError):
        return None
    out = {}
    for k in keys:
        # On the wire a balance key is "source": "detected" with "balance": true (clients
        # refuse a list with a source they do not know: CONTRACTS.md 6).
        source = "balance" if k.get("balance") else k.get("source", "?")
        out[source] = out.get(source, 0) + 1
    return out


def percentile(values, q):
    """Nearest-rank percentile; inf entries stand for 'never salted'."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, math.ceil(q / 100.0 * len(v)) - 1))
    return v[k]


def noise_floor(records, partitions, trials=400):
    """Expected max/avg of `records` spread perfectly at random over `partitions` (what even
    an ideal spreader shows from sampling noise alone), normal approximation, fixed seed."""
    if records <= 0:
        return None
    rng = random.Random(42)
    mean = records / partitions
    sd = math.sqrt(mean * (1 - 1 / partitions))
    acc = 0.0
    for _ in range(trials):
        acc += max(rng.gauss(mean, sd) for _ in range(partitions)) / mean
    return acc / trials


def murmur2(data):
    """Kafka's murmur2 (the Java client's and librdkafka's murmur2_random partitioner)."""
    length, m = len(data), 0x5bd1e995
    h = (0x9747b28c ^ length) & 0xffffffff
    n4 = length // 4
    for i in range(n4):
        k = (int.from_bytes(data[4 * i:4 * i + 4], "little") * m) & 0xffffffff
        k = ((k ^ (k >> 24)) * m) & 0xffffffff
        h = ((h * m) & 0xffffffff) ^ k
    rem, base = length & 3, n4 * 4
    if rem == 3:
        h ^= data[base + 2] << 16
    if rem >= 2:
        h ^= data[base + 1] << 8
    if rem >= 1:
        h = ((h ^ data[base]) * m) & 0xffffffff
    h = ((h ^ (h >> 13)) * m) & 0xffffffff
    return h ^ (h >> 15)


def home_partition(key, partitions):
    return (murmur2(key.encode()) & 0x7fffffff) % partitions


def listed_after_ms(work, topic, summaries, start_at_ms):
    """Per key the schedule made hot: ms from its surge start (the producers' common start plus
    hot_since_s) to the coordinator's first list_change that added it at or after that moment
    (None: never), from the coordinator's log. The coordinator's share of detection; the rest
    of detect_s is delivery to every producer."""
    added = {}
    try:
        with open(os.path.join(work, "coordinator.log")) as f:
            for line in f:
                if '"list_change"' not in line:
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("topic") == topic:
                    for k in j.get("added", []):
                        added.setdefault(k, []).append(j["ts_ms"])
    except OSError:
        return {}
    out = {}
    for h in summaries[0]["hot_keys"]:
        start = start_at_ms + h["hot_since_s"] * 1000
        after = [t - start for t in added.get(h["key"], []) if t >= start]
        out[h["key"]] = round(min(after)) if after else None
    return out


def list_changes(work, topic):
    """The coordinator's list_change log events for `topic` (one per published version)."""
    out = []
    try:
        with open(os.path.join(work, "coordinator.log")) as f:
            for line in f:
                if '"list_change"' not in line:
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("event") == "list_change" and j.get("topic") == topic:
                    out.append(j)
    except OSError:
        pass
    return out


def steady_churn(work, topic, start_at_ms, warmup_s, duration_s):
    """Versions the coordinator published for `topic` after the warm-up: from warmup_s into
    the run to the producers' end (duration_s), per minute of that span, with the causes.
    Start-up publishes the topic's first lists (every scenario does, and 16 s runs are mostly
    start-up); the churn goal (<= 20 versions a minute) is about the steady state after it.
    None when the run is too short to leave 20 s after the warm-up."""
    span = duration_s - warmup_s
    if span < 20:
        return None
    lo, hi = start_at_ms + warmup_s * 1000, start_at_ms + duration_s * 1000
    events = [e for e in list_changes(work, topic) if lo <= e["ts_ms"] < hi]
    causes = {}
    for e in events:
        causes[e.get("cause", "?")] = causes.get(e.get("cause", "?"), 0) + 1
    return dict(warmup_s=warmup_s, span_s=span, versions=len(events),
                per_min=len(events) * 60.0 / span, causes=causes,
                changes=[dict(t_s=round((e["ts_ms"] - start_at_ms) / 1000.0, 2),
                              cause=e.get("cause"), keys=e.get("keys"),
                              sources=e.get("sources"), added=e.get("added"),
                              removed=e.get("removed")) for e in events])


def transient_split(scn, counts, summaries):
    """The transient of the keys that became hot inside the steady window, apart from the rest.

    Transient: the records each such key sent to its home partition from the moment it became
    hot until the producer salted it (the producer's own schedule and first salted record:
    rate x share x detection time), less the fair share of them (1/P) home would have had
    anyway, i.e. the records above fair share from surge to salting. Reported in records and
    in partition-seconds (seconds of one partition's fair load).
    Steady: the window's broker counts with those records spread evenly instead, max/avg.
    None when no key became hot inside the window."""
    parts = len(counts)
    w0, w1 = scn["window"], scn["duration"]
    per_rate = scn["rate"] / scn["producers"]
    at_home = [0.0] * parts
    moves = set()
    for s in summaries:
        for h in s["hot_keys"]:
            since = h["hot_since_s"]
            if not w0 <= since < w1:
                continue
            d = h["detect_s"] if h["detect_s"] is not None else w1 - since
            n = per_rate * h["share"] * max(0.0, min(d, w1 - since))
            at_home[home_partition(h["key"], parts)] += n
            moves.add(since)
    if not moves:
        return None
    sent_home = sum(at_home)
    above_fair = sent_home * (1 - 1 / parts)
    fair_rate = scn["rate"] / parts
    steady = [c - a + sent_home / parts for c, a in zip(counts, at_home)]
    avg = sum(steady) / parts
    return dict(moves=len(moves), records_above_fair=above_fair,
                partition_s=above_fair / fair_rate,
                partition_s_per_move=above_fair / fair_rate / len(moves),
                steady_max_avg=max(steady) / avg if avg > 0 else None)


def balance(delta):
    total = sum(delta)
    avg = total / len(delta) if delta else 0
    return dict(
        max_avg=(max(delta) / avg) if avg > 0 else None,
        idle_share=sum(1 for d in delta if d <= 0) / len(delta),
        records=total,
        loads=[d / avg if avg > 0 else 0 for d in delta],
    )


def run_strategy(ctx, name, scn, strategy, seed_base, tag="", count=True):
    bindir, bootstrap, work = ctx["bindir"], ctx["bootstrap"], ctx["work"]
    topic = f"{name}-{strategy}"
    fleet = ctx["fleet"]
    per_rate = scn["rate"] / scn["producers"]
    start_at_ms = int((time.time() + 1.5 + 0.05 * scn["producers"]) * 1000)
    # The steady window, counted on the brokers by record timestamp while the topic is written
    # (exact even when deliveries lag behind on a loaded machine).
    w0 = start_at_ms + int(scn["window"] * 1000)
    w1 = start_at_ms + int(scn["duration"] * 1000) + 1000
    counter = None
    if count:
        counter = fleet.start([f"{bindir}/hotkey-watch", "--bootstrap", bootstrap, "--topic",
                               topic, "--window", f"{w0}:{w1}", "--follow"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = counter.stderr.readline()
        if "counting" not in ready:
            raise RuntimeError(f"{topic}: hotkey-watch did not start: {ready}")
    outs, procs = [], []
    for i in range(scn["producers"]):
        out = os.path.join(work, f"{topic}{tag}-p{i}.json")
        outs.append(out)
        args = [f"{bindir}/hotkey-loadgen", "--bootstrap", bootstrap, "--topic", topic,
                "--strategy", "hotkey" if is_hotkey(strategy) else strategy, "--producer-id", f"{topic}-p{i}",
                "--rate", f"{per_rate:g}", "--duration", str(scn["duration"]),
                "--start-at-ms", str(start_at_ms), "--seed", str(seed_base + i),
                "--json-out", out, "--value-bytes", str(VALUE_BYTES)] + scn["workload"]
        if strategy == "static":
            for k in scn["whitelist"]:
                args += ["--whitelist", k]
        if is_hotkey(strategy):
            args += ["--coordinator", ctx["coordinator_url"]]
            for kv in ctx["client_props"] + VARIANTS.get(strategy, []):
                args += ["--client-prop", kv]
        procs.append(fleet.start(args, stdout=subprocess.DEVNULL,
                                 stderr=open(out + ".log", "w")))
    killer = None
    if scn.get("kill_at") and is_hotkey(strategy) and ctx.get("kill") is not None:
        # kill -9 of the coordinator at kill_at s into the schedule, by the producers' clock.
        victim = ctx.pop("kill")
        delay = start_at_ms / 1000.0 + scn["kill_at"] - time.time()
        killer = threading.Timer(max(0.0, delay), lambda: victim.poll() is None and victim.kill())
        killer.start()
    for p in procs:
        try:
            p.wait(timeout=scn["duration"] + 60)
        except subprocess.TimeoutExpired:
            fleet.stop(p)
        if p in fleet.procs:
            fleet.procs.remove(p)
    if killer is not None:
        killer.join()
    # Exit 3 means the producer ran but some records failed; that is a result, kept below.
    failed = [(o, p.returncode) for o, p in zip(outs, procs)
              if p.returncode not in (0, 3) or not os.path.exists(o)]
    if failed:
        logs = "\n".join(open(o + ".log").read()[-2000:] for o, _ in failed)
        raise RuntimeError(f"{topic}: producers failed {failed}:\n{logs}")
    summaries = [json.load(open(o)) for o in outs]
    if counter is None:
        # Saturation runs: the producers' own figures only (a tailing counter cannot keep up
        # with an unthrottled producer on the same two cores).
        sent = sum(s["records_sent"] for s in summaries)
        cpu = sum(s["cpu_s"] for s in summaries)
        return dict(strategy=strategy, throughput=sum(s["throughput"] for s in summaries),
                    records_salted_share=sum(s["salted_records"] for s in summaries) / sent,
                    producer_cpu_s=cpu)
    # The list as the run left it, read before the window is counted: on a loaded machine the
    # read-back takes longer than hold_ms, and a list read after it had already dropped every
    # key (no reports since the producers stopped) in a version counted as the run's.
    at_end = None
    if is_hotkey(strategy):
        at_end = (topic_version(ctx["coordinator_url"], topic),
                  listed_by_source(ctx["coordinator_url"], topic))
    # Every producer flushed: what the brokers hold is final.
    t_read = time.monotonic()
    counter.send_signal(signal.SIGTERM)
    out, err = counter.communicate(timeout=180)
    fleet.procs.remove(counter)
    if counter.returncode != 0:
        # The churn figures come from the coordinator's log, not the brokers: say them anyway.
        churn = steady_churn(work, topic, start_at_ms, ctx["churn_warmup"], scn["duration"]) \
            if is_hotkey(strategy) else None
        raise RuntimeError(f"{topic}: counting the window failed: {err}"
                           + (f" (steady churn: {churn['versions']} versions in "
                              f"{churn['warmup_s']:g}-{scn['duration']:g} s, causes "
                              f"{churn['causes']})" if churn else ""))
    w = json.loads(out)
    counts, whole = w["counts"], w["end_offsets"]
    r = dict(strategy=strategy, topic=topic, window_s=[scn["window"], scn["duration"]],
             counts=counts, read_back_s=time.monotonic() - t_read, start_at_ms=start_at_ms)
    r.update(balance(counts))
    r["noise_floor"] = noise_floor(r["records"], len(counts))
    # Whole-topic end offsets (earlier runs on the topic included) for reference.
    r["whole_topic"] = {k: v for k, v in balance(whole).items() if k != "loads"}

    # Ordering cost: distinct keys and records salted, over the whole fleet.
    sent_bits = 0
    for s in summaries:
        sent_bits |= int(s["background_sent_hex"][::-1] or "0", 16)
    distinct = bin(sent_bits).count("1") + max(s["overlay_keys_sent"] for s in summaries)
    salted_keys = set()
    for s in summaries:
        salted_keys.update(s["keys_salted"])
    sent = sum(s["records_sent"] for s in summaries)
    # Records a producer still held when its flush timed out (15 s) never reached the brokers:
    # the counts above miss them, so the run's balance figures are not valid (a starved mock
    # broker once left 3% of one strategy's records undelivered and read as max/avg 1.11).
    r["records_undelivered"] = sent - sum(s.get("records_delivered", s["records_sent"])
                                          for s in summaries)
    r["producers_unflushed"] = sum(1 for s in summaries if not s.get("flushed", True))
    # The fleet's records sent and not yet acknowledged, sampled every second (summed over the
    # producers, by second): a backlog that grows through the run is the brokers falling behind.
    series = [s.get("backlog_per_s", []) for s in summaries]
    r["backlog_per_s"] = [sum(b[i] for b in series if i < len(b))
                          for i in range(max((len(b) for b in series), default=0))]
    r["backlog_at_stop"] = sum(s.get("backlog_at_stop", 0) for s in summaries)
    r.update(distinct_keys=distinct, keys_salted=len(salted_keys),
             keys_salted_share=len(salted_keys) / distinct if distinct else 0,
             salted_keys_sample=sorted(salted_keys)[:20],
             records_sent=sent,
             records_salted_share=sum(s["salted_records"] for s in summaries) / sent)

    # Detection to salting, across producers and the keys the schedule made hot (a key that a
    # producer never salted counts as infinitely late).
    det = []
    for s in summaries:
        for h in s["hot_keys"]:
            if h["hot_since_s"] < scn["duration"] - 2:
                det.append(h["detect_s"] if h["detect_s"] is not None else math.inf)
    r["detect_samples"] = len(det)
    r["detect_never"] = sum(1 for d in det if d == math.inf)
    r["detect_p50_s"] = percentile(det, 50)
    r["detect_p99_s"] = percentile(det, 99)
    if is_hotkey(strategy):
        r["transient"] = transient_split(scn, counts, summaries)
        r["listed_after_ms"] = listed_after_ms(ctx["work"], topic, summaries, start_at_ms)
    r["throughput"] = sum(s["throughput"] for s in summaries)
    r["target_rate"] = scn["rate"]
    # The machine's load average (1 min) when the run ended: figures from a loaded machine
    # (other builds on the same cores) are not comparable with an idle one's.
    r["load_avg_1m"] = round(os.getloadavg()[0], 2)
    if is_hotkey(strategy):
        # List churn: versions the coordinator published for the topic during the run, and
        # why each key of the final list is salted.
        r["list_versions"], r["listed_by_source"] = at_end
        if r["list_versions"] is not None:
            r["list_versions_per_min"] = r["list_versions"] * 60.0 / scn["duration"]
        r["steady_churn"] = steady_churn(ctx["work"], topic, start_at_ms,
                                         ctx["churn_warmup"], scn["duration"])
    cpu = sum(s["cpu_s"] for s in summaries)
    r["producer_cpu_s"] = cpu
    r["records_per_cpu_s"] = sent / cpu if cpu > 0 else None
    r["records_failed"] = sum(s["records_failed"] for s in summaries)
    if r["records_failed"]:
        r["producer_errors"] = sorted({line.strip() for o in outs
                                       for line in open(o + ".log").read().splitlines()})[:10]
    return r


def run_scenario(args, name, scn, strategies, fleet):
    work = tempfile.mkdtemp(prefix=f"hotkey-bench-{name}-")
    ctx = dict(bindir=args.bindir, work=work, fleet=fleet, client_props=args.client_prop,
               churn_warmup=args.churn_warmup)
    bsfile = os.path.join(work, "bootstrap")
    mock = fleet.start([f"{args.bindir}/hotkey-mock-kafka", "--brokers", "3",
                        "--bootstrap-file", bsfile]
                       + [a for s in strategies for a in ("--topic", f"{name}-{s}:{scn['partitions']}")],
                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "mock.log"), "w"))
    coord = None
    try:
        ctx["bootstrap"] = wait_for(lambda: os.path.exists(bsfile) and open(bsfile).read().strip(),
                                    20, "the mock cluster")
        def start_coordinator(data):
            port = free_port()
            cmd = [f"{args.bindir}/hotkey-coordinator", "--listen", f"127.0.0.1:{port}",
                   "--data", os.path.join(work, data)]
            if args.coordinator_config:
                cmd += ["--config", args.coordinator_config]
            c = fleet.start(cmd, stdout=open(os.path.join(work, "coordinator.log"), "a"),
                            stderr=subprocess.STDOUT)
            ctx["coordinator_url"] = f"http://127.0.0.1:{port}"
            wait_for(lambda: c.poll() is not None or http_ok(ctx["coordinator_url"] + "/readyz"),
                     20, "the coordinator")
            if c.poll() is not None:
                raise RuntimeError("hotkey-coordinator exited: "
                                   + open(os.path.join(work, "coordinator.log")).read()[-2000:])
            return c

        outage = scn.get("kill_at")
        if any(is_hotkey(s) for s in strategies) and not outage:
            coord = start_coordinator("coordinator-data")
        results = []
        for i, strategy in enumerate(strategies):
            print(f"  {name:<9} {strategy:<14}", end="", flush=True)
            if outage and is_hotkey(strategy):
                coord = start_coordinator(f"coordinator-data-{strategy}")
                ctx["kill"] = coord
            r = run_strategy(ctx, name, scn, strategy, seed_base=args.seed_base)
            if outage and coord is not None:
                fleet.stop(coord)
                coord = None
            results.append(r)
            det = r["detect_p99_s"]
            print(f" max/avg {r['max_avg']:6.2f}  idle {r['idle_share']*100:3.0f}%  "
                  f"keys salted {r['keys_salted']:>5} ({r['keys_salted_share']*100:.3f}%)  "
                  f"records salted {r['records_salted_share']*100:5.1f}%  "
                  f"detect p99 {fmt_s(det)}  {r['throughput']:7.0f} rec/s"
                  + (f"  list versions {versions(r)}" if is_hotkey(strategy) else ""),
                  flush=True)
            if r.get("steady_churn"):
                c = r["steady_churn"]
                print(f"  {'':<9} {'':<14} steady churn: {c['versions']} versions in "
                      f"{c['warmup_s']:g}-{scn['duration']:g} s ({c['per_min']:.1f} a minute; "
                      f"causes {c['causes']}); load average {r['load_avg_1m']}", flush=True)
            if r.get("records_undelivered"):
                print(f"  {'':<9} {'':<14} NOT VALID: {r['records_undelivered']} records "
                      f"({r['records_undelivered'] / r['records_sent'] * 100:.1f}%) never reached "
                      f"the brokers ({r['producers_unflushed']} of {scn['producers']} producers' "
                      f"flush timed out): max/avg counts without them", flush=True)
                bl = r.get("backlog_per_s") or [0]
                print(f"  {'':<9} {'':<14} unacknowledged records: {r['backlog_at_stop']} when "
                      f"sending stopped, at most {max(bl)} in the run (per 10 s: "
                      f"{', '.join(str(b) for b in bl[::10])})", flush=True)
            listed = [v for v in (r.get("listed_after_ms") or {}).values() if v is not None]
            if listed:
                print(f"  {'':<9} {'':<14} listed by the coordinator {min(listed)}-{max(listed)} ms "
                      f"after the surge start ({len(listed)} of {len(r['listed_after_ms'])} keys)",
                      flush=True)
            if r.get("transient"):
                t = r["transient"]
                print(f"  {'':<9} {'':<14} transient {t['partition_s_per_move']:5.2f} partition-s "
                      f"per move ({t['moves']} moves, {t['records_above_fair']:.0f} records above "
                      f"fair share)  steady max/avg {t['steady_max_avg']:.2f}", flush=True)
        if scn.get("saturation") and not args.no_saturation:
            # The topic (and, for hotkey, its list) is warm from the balance run.
            # The surge is on from the first record here: this measures the steady state.
            wl = list(scn["workload"])
            if "--hot-start" in wl:
                wl[wl.index("--hot-start") + 1] = "0"
            sat = dict(scn, producers=1, rate=1e7, duration=SATURATION_S, window=1, workload=wl)
            for r in results:
                print(f"  {name:<9} {r['strategy']:<9} saturation, 1 producer:", end="",
                      flush=True)
                q = run_strategy(ctx, name, sat, r["strategy"], seed_base=5000, tag="-sat",
                                 count=False)
                r["saturation"] = dict(records_per_s=q["throughput"],
                                       records_salted_share=q["records_salted_share"],
                                       producer_cpu_s=q["producer_cpu_s"],
                                       duration_s=SATURATION_S)
                print(f" {q['throughput']:8.0f} rec/s, {q['records_salted_share']*100:.0f}% "
                      f"salted", flush=True)
        if coord is not None and not args.keep:
            fleet.stop(coord)
        return dict(name=name, title=scn["title"], partitions=scn["partitions"],
                    producers=scn["producers"], rate=scn["rate"], duration_s=scn["duration"],
                    window_s=scn["window"], workload=scn["workload"],
                    whitelist=scn["whitelist"], results=results)
    finally:
        if coord is not None:
            fleet.stop(coord)
        fleet.stop(mock)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"  (kept {work})")


def fmt_s(v):
    if v is None:
        return "   n/a"
    if v == math.inf:
        return " never"
    return f"{v:5.2f}s"


def add_relative(scenarios):
    for scn in scenarios:
        base = next((r for r in scn["results"] if r["strategy"] == "naive"), None)
        for r in scn["results"]:
            r["throughput_vs_naive"] = (r["throughput"] / base["throughput"]
                                        if base and base["throughput"] else None)
            bs, rs = (base or {}).get("saturation"), r.get("saturation")
            r["saturation_vs_naive"] = (rs["records_per_s"] / bs["records_per_s"]
                                        if bs and rs and bs["records_per_s"] else None)
            r["cpu_efficiency_vs_naive"] = (
                r["records_per_cpu_s"] / base["records_per_cpu_s"]
                if base and base.get("records_per_cpu_s") and r.get("records_per_cpu_s")
                else None)


def versions(r):
    if r.get("list_versions") is None:
        return "n/a"
    out = f"{r['list_versions']} ({r['list_versions_per_min']:.1f})"
    if r.get("listed_by_source"):
        out += "; listed: " + ", ".join(f"{n} {s}" for s, n in sorted(r["listed_by_source"].items()))
    return out


def steady(r):
    c = r.get("steady_churn")
    if not c:
        return "n/a"
    return f"{c['versions']} ({c['per_min']:.1f})"


def markdown(doc):
    lines = [f"Command: `{doc['command']}`  ", f"Machine: {doc['machine']}; "
             f"total {doc['elapsed_s']:.0f} s; load average (1 min) at the end of each run "
             f"{', '.join(str(r['load_avg_1m']) for s in doc['scenarios'] for r in s['results'])}.",
             "",
             "| scenario | strategy | max/avg (noise floor) | idle | keys salted | records salted | "
             "detect p50 / p99 | throughput vs naive | producer CPU/record vs naive | "
             "list versions (per min); keys listed at the end by source | "
             f"versions after the first {doc['churn_warmup_s']:g} s (per min) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for scn in doc["scenarios"]:
        for r in scn["results"]:
            det = ("n/a" if r["detect_samples"] == 0 or r["strategy"] == "naive" else
                   f"{fmt_s(r['detect_p50_s']).strip()} / {fmt_s(r['detect_p99_s']).strip()}"
                   + (f" ({r['detect_never']}/{r['detect_samples']} never)"
                      if r["detect_never"] else ""))
            thr = r.get("throughput_vs_naive")
            eff = r.get("cpu_efficiency_vs_naive")
            lines.append(
                f"| {scn['title']} | {r['strategy']} | {r['max_avg']:.2f} "
                f"({r['noise_floor']:.2f})"
                + (f" **not valid: {r['records_undelivered']} records undelivered**"
                   if r.get("records_undelivered") else "") + " | "
                f"{r['idle_share']*100:.0f}% | {r['keys_salted']} of {r['distinct_keys']} "
                f"({r['keys_salted_share']*100:.3f}%) | {r['records_salted_share']*100:.1f}% | "
                f"{det} | {'' if thr is None else f'{thr:.3f}x'} | "
                f"{'' if eff is None else f'{1/eff:.2f}x'} | {versions(r)} | "
                f"{steady(r) if is_hotkey(r['strategy']) else ''} |")
    tr = [(scn, r) for scn in doc["scenarios"] for r in scn["results"] if r.get("transient")]
    if tr:
        lines += ["", "Keys that became hot inside the window: the transient (records above fair "
                  "share on their home partitions from surge to salting, estimated from each "
                  "producer's schedule and first salted record) and the steady window (the "
                  "broker counts with those records spread evenly):", "",
                  "| scenario | strategy | max/avg | moves | transient, partition-s per move | "
                  "records above fair share | steady max/avg |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for scn, r in tr:
            t = r["transient"]
            lines.append(f"| {scn['title']} | {r['strategy']} | {r['max_avg']:.2f} | "
                         f"{t['moves']} | {t['partition_s_per_move']:.2f} | "
                         f"{t['records_above_fair']:.0f} | {t['steady_max_avg']:.2f} |")
    sat = [(scn, r) for scn in doc["scenarios"] for r in scn["results"] if r.get("saturation")]
    if sat:
        lines += ["", "Saturation (one producer, no rate limit, same workload, warm topic and "
                  f"list, {SATURATION_S} s):", "",
                  "| scenario | strategy | records/s | vs naive | records salted |",
                  "|---|---|---:|---:|---:|"]
        for scn, r in sat:
            v = r.get("saturation_vs_naive")
            lines.append(f"| {scn['title']} | {r['strategy']} | "
                         f"{r['saturation']['records_per_s']:.0f} | "
                         f"{'' if v is None else f'{v:.3f}x'} | "
                         f"{r['saturation']['records_salted_share']*100:.1f}% |")
    return "\n".join(lines) + "\n"


def chart(doc, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("balance_bench: matplotlib not available (apt-get install python3-matplotlib); "
              "no PNG written", file=sys.stderr)
        return False
    scns = doc["scenarios"]
    cols = 2 if len(scns) > 1 else 1
    rows = math.ceil(len(scns) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 2.6 * rows), squeeze=False)
    for ax, scn in zip(axes.flat, scns):
        by = {r["strategy"]: r for r in scn["results"]}
        n = scn["partitions"]
        xs = list(range(n))
        if "naive" in by:
            ax.bar(xs, by["naive"]["loads"], width=0.9, color="#c8c8c8",
                   label=f"before: naive (max/avg {by['naive']['max_avg']:.2f})")
        if "hotkey" in by:
            ax.bar(xs, by["hotkey"]["loads"], width=0.5, color="#1f77b4",
                   label=f"after: hotkey (max/avg {by['hotkey']['max_avg']:.2f})")
        for s, c in (("static", "#d62728"), ("adaptive", "#ff7f0e")):
            if s in by:
                ax.plot(xs, by[s]["loads"], ".", color=c, markersize=4,
                        label=f"{s} (max/avg {by[s]['max_avg']:.2f})")
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle="--")
        ax.set_title(scn["title"], fontsize=9)
        ax.set_xlabel("partition", fontsize=8)
        ax.set_ylabel("load / average", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6.5, loc="upper right")
    for ax in list(axes.flat)[len(scns):]:
        ax.axis("off")
    fig.suptitle("Per-partition load on the brokers over the steady window, 1.0 = perfect",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bindir", required=True, help="where hotkey-* binaries are")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--quick", action="store_true", help=f"reduced set for CI: {QUICK}")
    ap.add_argument("--scenarios", help="comma-separated subset of: " + ",".join(FULL))
    ap.add_argument("--strategies", default=",".join(STRATEGIES),
                    help="comma-separated subset of: " + ",".join(STRATEGIES + list(VARIANTS)))
    ap.add_argument("--coordinator-config", help="config file passed to hotkey-coordinator")
    ap.add_argument("--client-prop", action="append", default=[],
                    help="extra hotkey.* client property K=V for the hotkey strategy")
    ap.add_argument("--no-saturation", action="store_true",
                    help="skip the one-producer saturation runs (always skipped with --quick)")
    ap.add_argument("--seed-base", type=int, default=1000,
                    help="workload seed of the first producer (the others follow); every run "
                         "with the same seed replays the same records, so repeated runs share "
                         "one draw of the brokers' counting noise")
    ap.add_argument("--duration", type=float,
                    help="run each scenario this many seconds instead of its default "
                         "(the steady window still opens at the scenario's start)")
    ap.add_argument("--churn-warmup", type=float, default=15,
                    help="steady-state churn counts the versions published from this many "
                         "seconds into each run to its end (runs leaving under 20 s: n/a)")
    ap.add_argument("--keep", action="store_true", help="keep per-run work directories")
    ap.add_argument("--command", default="", help="command line recorded in the results")
    args = ap.parse_args()

    names = args.scenarios.split(",") if args.scenarios else (QUICK if args.quick else FULL)
    strategies = args.strategies.split(",")
    for n in names:
        if n not in SCENARIOS:
            ap.error(f"unknown scenario {n}")
    for s in strategies:
        if s not in STRATEGIES and s not in VARIANTS:
            ap.error(f"unknown strategy {s}")
    if args.quick:
        args.no_saturation = True
    os.makedirs(args.out, exist_ok=True)

    fleet = Fleet()

    def on_signal(signum, frame):
        fleet.stop_all()
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    t0 = time.monotonic()
    scenarios = []
    try:
        for n in names:
            scn = dict(SCENARIOS[n])
            scn_strategies = strategies
            if args.quick:
                scn.update(QUICK_OVERRIDES)
                scn.update(QUICK_SCENARIO.get(n, {}))
                only = scn.pop("strategies", None)
                if only:
                    scn_strategies = [s for s in strategies if s in only]
                if not scn_strategies:
                    continue
            if args.duration:
                if args.duration <= scn["window"] + 1:
                    ap.error(f"--duration must be more than {scn['window'] + 1} s for {n}")
                scn["duration"] = args.duration
            scenarios.append(run_scenario(args, n, scn, scn_strategies, fleet))
    finally:
        fleet.stop_all()
    add_relative(scenarios)
    doc = dict(command=args.command or " ".join(sys.argv),
               machine=f"{os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}",
               elapsed_s=time.monotonic() - t0, quick=args.quick,
               churn_warmup_s=args.churn_warmup,
               load_avg=[round(x, 2) for x in os.getloadavg()],
               strategies={s: LABELS[s] for s in strategies}, scenarios=scenarios)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = markdown(doc)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(md)
    png = os.path.join(args.out, "balance.png")
    chart(doc, png)
    print()
    print(md)
    print(f"wrote {args.out}/results.json, results.md" +
          (", balance.png" if os.path.exists(png) else ""))


if __name__ == "__main__":
    main()
