#!/usr/bin/env python3
"""Java and mixed fleets side by side on a real Kafka broker (issue 28), driven by
scripts/java-fleet-bench.sh; docs/BENCHMARKS.md "Java client" has the figures.

One Apache Kafka broker (scripts/kafka.sh, KRaft on loopback) and one hotkey-coordinator; every
fleet gets its own 24-partition topic and sends the same workload (one key, hot-0, at 40% of
the records, the rest uniform over 100,000 keys) at the same rate, all fleets of a scenario at
the same time from one shared start; the C++ and the Java producers of a topic draw the same
keys in the same order (same seeds, the same generator):

  fleet   cpp: hotkey-loadgen processes with the C++ library (the C++ fleet)
          java: Java producers with the library (JVMs x threads, a KafkaProducer each)
          java-naive: the same Java producers without it (Kafka's built-in partitioner)
  mixed   mixed: C++ library, Java library and Python (python3-confluent-kafka with the
          librdkafka plugin) producers together on one topic
          mixed-naive: the same three kinds without the library (murmur2 everywhere)
  cpu     (only when named) producer records per CPU-second, a plain KafkaProducer against
          one with the library, alternated in one JVM (client/java/bench CpuPerRecord), or
          each phase in a JVM of its own with --cpu-jvm-per-phase

Balance is max/avg of the records per partition on the broker whose timestamps fall in the
steady window [--window, --duration] s after the start (hotkey-watch --window, exact even when
deliveries lag). Writes results.json and results.md to --out.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "balance"))
from balance_bench import Fleet, balance, free_port, http_ok, noise_floor, topic_version, wait_for  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PARTITIONS = 24


def producers_of(kind, args, ctx, topic, n, rate, seed, start_at_ms, tag):
    """The commands of n producers of one kind sending `rate` records/s together."""
    work, bootstrap = ctx["work"], ctx["bootstrap"]
    common = ["--keys", str(args.keys), "--hot-share", str(args.hot_share),
              "--value-bytes", "100", "--start-at-ms", str(start_at_ms),
              "--duration", str(args.duration)]
    cmds = []
    if kind in ("cpp", "cpp-naive"):
        for i in range(n):
            out = os.path.join(work, f"{topic}-{tag}{i}.json")
            cmd = [f"{args.bindir}/hotkey-loadgen", "--bootstrap", bootstrap, "--topic", topic,
                   "--strategy", "hotkey" if kind == "cpp" else "naive",
                   "--producer-id", f"{topic}-{tag}{i}", "--rate", f"{rate / n:g}",
                   "--seed", str(seed + i), "--json-out", out, "--zipf", "0",
                   "--kafka-prop", f"linger.ms={args.rdkafka_linger_ms}"] + common
            if kind == "cpp":
                cmd += ["--coordinator", ctx["url"]]
            cmds.append((cmd, out))
    elif kind in ("java", "java-naive"):
        jvms, threads = n
        for j in range(jvms):
            out = os.path.join(work, f"{topic}-{tag}{j}.json")
            cmd = ["java", "-Xmx256m", "-cp", args.java_cp, "dev.hotkey.kafka.bench.Fleet",
                   "--bootstrap", bootstrap, "--topic", topic,
                   "--mode", "hotkey" if kind == "java" else "naive",
                   "--coordinator", ctx["url"], "--producer-id", f"{topic}-{tag}{j}",
                   "--producers", str(threads), "--rate", f"{rate / jvms:g}",
                   "--seed", str(seed + threads * j), "--json-out", out, "--zipf", "0"] + common
            cmds.append((cmd, out))
    elif kind in ("python", "python-naive"):
        for i in range(n):
            out = os.path.join(work, f"{topic}-{tag}{i}.json")
            cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench/fleet/plugin_producer.py"),
                   "--bootstrap", bootstrap, "--topic", topic,
                   "--producer-id", f"{topic}-{tag}{i}", "--rate", f"{rate / n:g}",
                   "--seed", str(seed + i), "--json-out", out,
                   "--linger-ms", str(args.rdkafka_linger_ms)] + common
            if kind == "python":
                cmd += ["--plugin", args.plugin, "--coordinator", ctx["url"]]
            cmds.append((cmd, out))
    return cmds


def scenarios(args):
    """name -> {topic: (description, [(kind, n, rate share)])}."""
    java = (args.java_jvms, args.java_threads)
    r = args.rate
    return {
        "fleet": {
            "fleet-cpp": ("C++ fleet (hotkey-loadgen, C++ library)",
                          [("cpp", args.cpp_producers, r)]),
            "fleet-java": ("Java fleet (the Java library)", [("java", java, r)]),
            "fleet-java-naive": ("naive Java fleet (plain KafkaProducer)",
                                 [("java-naive", java, r)]),
        },
        "mixed": {
            "mixed": ("mixed fleet: C++ library + Java library + Python with the plugin",
                      [("cpp", 2, r / 3), ("java", (1, 2), r / 3), ("python", 2, r / 3)]),
            "mixed-naive": ("naive mixed fleet: C++ + Java + Python, no library",
                            [("cpp-naive", 2, r / 3), ("java-naive", (1, 2), r / 3),
                             ("python-naive", 2, r / 3)]),
        },
    }


def create_topics(bootstrap, topics):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics])
    for f in futures.values():
        f.result(60)

    def led():
        md = admin.list_topics(timeout=10)
        return all(t in md.topics and len(md.topics[t].partitions) == PARTITIONS
                   and all(p.leader >= 0 for p in md.topics[t].partitions.values())
                   for t in topics)
    wait_for(led, 60, "the topics' leaders")


def run_scenario(args, ctx, name, topics):
    fleet = ctx["fleet"]
    create_topics(ctx["bootstrap"], list(topics))
    counters = {}
    start_at_ms = int((time.time() + 8 + len(topics) * 2) * 1000)  # producers start before it
    w0 = start_at_ms + int(args.window * 1000)
    w1 = start_at_ms + int(args.duration * 1000) + 1000
    for topic in topics:
        # A just-created topic's offsets may not be readable yet: try again for a while.
        for attempt in range(20):
            c = fleet.start([f"{args.bindir}/hotkey-watch", "--bootstrap", ctx["bootstrap"],
                             "--topic", topic, "--window", f"{w0}:{w1}", "--follow"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ready = c.stderr.readline()
            if "counting" in ready:
                break
            fleet.stop(c)
            if attempt == 19:
                raise RuntimeError(f"{topic}: hotkey-watch did not start: {ready}")
            time.sleep(1)
        counters[topic] = c
    procs = {t: [] for t in topics}
    for topic, (_, parts) in topics.items():
        # Every topic's producers take seeds 1, 2, ... (per kind from 1, 1001, 2001): a Java
        # producer draws loadgen's keys for its seed (client/java/bench Workload), so the C++
        # and the Java fleet send the same keys in the same order.
        seed = 1
        for k, (kind, n, rate) in enumerate(parts):
            for cmd, out in producers_of(kind, args, ctx, topic, n, rate, seed, start_at_ms,
                                         f"{kind}-"):
                log = open(out + ".log", "w")
                procs[topic].append((kind, out, fleet.start(cmd, stdout=log, stderr=log)))
            seed += 1000
    results = {}
    for topic, (desc, _) in topics.items():
        summaries = []
        for kind, out, p in procs[topic]:
            p.wait(timeout=args.duration + 120)
            fleet.procs.remove(p)
            if p.returncode not in (0, 3) or not os.path.exists(out):
                raise RuntimeError(f"{topic}: {kind} producer exited {p.returncode}:\n"
                                   + open(out + ".log").read()[-3000:])
            s = json.load(open(out))
            s["kind"] = kind
            summaries.append(s)
        c = counters[topic]
        c.send_signal(15)
        o, e = c.communicate(timeout=180)
        fleet.procs.remove(c)
        if c.returncode != 0:
            raise RuntimeError(f"{topic}: counting failed: {e}")
        counts = json.loads(o)["counts"]
        r = dict(topic=topic, fleet=desc, counts=counts)
        r.update(balance(counts))
        r.pop("loads")
        r["noise_floor"] = noise_floor(r["records"], len(counts))
        r["records_sent"] = sum(s["records_sent"] for s in summaries)
        r["records_failed"] = sum(s["records_failed"] for s in summaries)
        r["producer_cpu_s"] = {k: round(sum(s["cpu_s"] for s in summaries if s["kind"] == k), 2)
                               for k in dict.fromkeys(s["kind"] for s in summaries)}
        r["list_version"] = topic_version(ctx["url"], topic)
        try:
            with urllib.request.urlopen(f"{ctx['url']}/v1/hotkeys?topic={topic}", timeout=5) as h:
                r["list"] = json.load(h)
        except (urllib.error.URLError, OSError, ValueError):
            r["list"] = None
        results[topic] = r
        print(f"  {topic:<17} max/avg {r['max_avg']:.3f} (noise floor {r['noise_floor']:.3f})"
              f"  records in window {r['records']}  failed {r['records_failed']}"
              f"  list version {r['list_version']}  {desc}", flush=True)
    return results


def run_cpu(args, ctx):
    """Records per CPU-second, plain KafkaProducer vs the library (CpuPerRecord)."""
    create_topics(ctx["bootstrap"], ["cpu"])
    cmd = ["java", "-Xmx512m", "-cp", args.java_cp, "dev.hotkey.kafka.bench.CpuPerRecord",
           "--bootstrap", ctx["bootstrap"], "--topic", "cpu", "--coordinator", ctx["url"],
           "--rate", f"{args.cpu_rate:g}", "--rounds", str(args.cpu_rounds),
           "--warmup-rounds", str(args.cpu_warmup_rounds),
           "--phase-s", f"{args.cpu_phase_s:g}", "--warmup-s", f"{args.cpu_warmup_s:g}",
           "--zipf", "1.0", "--keys", str(args.keys)]
    if args.cpu_jvm_per_phase:
        cmd += ["--jvm-per-phase", "true"]
    for kv in args.cpu_client_prop:
        cmd += ["--client-prop", kv]
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            print("  " + line, end="", flush=True)
            lines.append(line.rstrip("\n"))
    if p.returncode != 0:
        raise RuntimeError(f"CpuPerRecord exited {p.returncode}")
    return dict(output=lines, list_version=topic_version(ctx["url"], "cpu"))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--java-cp", required=True, help="classpath of client/java/bench")
    ap.add_argument("--plugin", help="libhotkey-rdkafka.so (the mixed scenario)")
    ap.add_argument("--scenarios", default="fleet,mixed")
    ap.add_argument("--rate", type=float, default=2000, help="records/s per topic")
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--window", type=float, default=10, help="steady window start, s")
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--hot-share", type=float, default=0.4)
    ap.add_argument("--cpp-producers", type=int, default=4)
    ap.add_argument("--java-jvms", type=int, default=2)
    ap.add_argument("--java-threads", type=int, default=2, help="producers per JVM")
    # librdkafka 2.0.2 sends one partition per produce request (the Java producer one request
    # per broker): at loadgen's 50 ms a producer makes ~480 requests/s on 24 partitions,
    # which a broker sharing two loaded cores did not keep up with (deliveries stalled).
    ap.add_argument("--rdkafka-linger-ms", type=int, default=200,
                    help="linger.ms of the librdkafka producers (C++, Python)")
    ap.add_argument("--cpu-rate", type=float, default=5000, help="cpu: records/s")
    ap.add_argument("--cpu-rounds", type=int, default=6, help="cpu: rounds of both phases")
    ap.add_argument("--cpu-warmup-rounds", type=int, default=3,
                    help="cpu: rounds of both phases before those counted (JIT warm-up)")
    ap.add_argument("--cpu-phase-s", type=float, default=10, help="cpu: seconds per phase")
    ap.add_argument("--cpu-warmup-s", type=float, default=2,
                    help="cpu: seconds at the start of each phase not counted")
    ap.add_argument("--cpu-jvm-per-phase", action="store_true",
                    help="cpu: each phase in a JVM of its own (no warm-up rounds; give "
                         "--cpu-warmup-s time for the JIT instead)")
    ap.add_argument("--cpu-client-prop", action="append", default=[], metavar="K=V",
                    help="cpu: a property of the library's producer (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    names = args.scenarios.split(",")
    every = scenarios(args)
    if any(n not in every and n != "cpu" for n in names):
        ap.error(f"--scenarios takes {','.join(every)},cpu")
    if "mixed" in names and not args.plugin:
        ap.error("the mixed scenario needs --plugin")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hotkey-java-fleet-")
    fleet = Fleet()
    kafka_dir = os.path.join(work, "kafka")
    kafka = os.path.join(ROOT, "scripts/kafka.sh")
    doc = dict(command=args.command, started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
               load_before=open("/proc/loadavg").read().split()[:3], scenarios={})
    try:
        subprocess.run([kafka, "start", kafka_dir, "--nodes", "1", "--owner", str(os.getpid())],
                       check=True, stdout=subprocess.DEVNULL)
        bootstrap = subprocess.run([kafka, "bootstrap", kafka_dir], check=True,
                                   capture_output=True, text=True).stdout.strip()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        coord = fleet.start([f"{args.bindir}/hotkey-coordinator", "--listen", f"127.0.0.1:{port}",
                             "--data", os.path.join(work, "coordinator-data")],
                            stdout=open(os.path.join(work, "coordinator.log"), "w"),
                            stderr=subprocess.STDOUT)
        wait_for(lambda: coord.poll() is not None or http_ok(url + "/readyz"), 20,
                 "the coordinator")
        if coord.poll() is not None:
            raise RuntimeError("hotkey-coordinator exited")
        ctx = dict(work=work, fleet=fleet, bootstrap=bootstrap, url=url)
        for name in names:
            if name == "cpu":
                print(f"cpu: records per CPU-second at {args.cpu_rate:g} records/s, Zipf 1.0, "
                      f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)
                doc["cpu"] = run_cpu(args, ctx)
                continue
            print(f"{name}: {args.rate:g} records/s per topic for {args.duration:g} s, window "
                  f"[{args.window:g}, {args.duration:g}] s, load {doc['load_before']}", flush=True)
            doc["scenarios"][name] = run_scenario(args, ctx, name, every[name])
        doc["load_after"] = open("/proc/loadavg").read().split()[:3]
    finally:
        fleet.stop_all()
        subprocess.run([kafka, "stop", kafka_dir], stdout=subprocess.DEVNULL)
    if "fleet" in doc["scenarios"]:
        f = doc["scenarios"]["fleet"]
        d = f["fleet-java"]["max_avg"] - f["fleet-cpp"]["max_avg"]
        doc["java_minus_cpp"] = d
        print(f"Java fleet - C++ fleet: {d:+.3f} (goal: within 0.05)")
    lines = [f"`{args.command}` ({doc['started']}, load average {' '.join(doc['load_before'])}"
             f" before, {' '.join(doc.get('load_after', []))} after)"]
    if doc["scenarios"]:
        lines += ["", "| topic | fleet | max/avg | noise floor | records in window | failed |",
                  "|---|---|---|---|---|---|"]
    for scn in doc["scenarios"].values():
        for r in scn.values():
            lines.append(f"| `{r['topic']}` | {r['fleet']} | {r['max_avg']:.3f} | "
                         f"{r['noise_floor']:.3f} | {r['records']} | {r['records_failed']} |")
    if "cpu" in doc:
        lines += ["", "```"] + doc["cpu"]["output"] + ["```"]
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
