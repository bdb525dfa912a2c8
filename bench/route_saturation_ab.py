#!/usr/bin/env python3
"""Saturation A/B of the send path: records per producer CPU-second of one unthrottled
hotkey-loadgen producer per run, variants alternated round by round (reversed every other
round) on one mock cluster and coordinator, so machine load drifts over all of them alike.
Prints records per producer CPU-second per run, the per-variant medians and the goal ratios;
figures in docs/BENCHMARKS.md ("Client").

  bench/route_saturation_ab.py BIN_DIR ROUNDS SECONDS VARIANT[,VARIANT...] [--ref REF_BIN_DIR]
  e.g. bench/route_saturation_ab.py build/bin 5 5 \\
       naive,static,hotkey,producer,naive@cold,hotkey@cold,producer@cold

A variant is NAME[@WORKLOAD], optionally prefixed `ref:` to run that variant's loadgen from
REF_BIN_DIR (another build, e.g. main's, alternated with this one in the same rounds):
  workloads: hot90 (default: one key at 90% of the records, 12 partitions, surge on from the
             start) and cold (100,000 keys uniformly, none hot: every record cold).
  names: naive (plain librdkafka, murmur2_random), static / static_spread (static salting),
         hotkey (the client's router and sampler before a plain librdkafka producer), producer
         (the hotkey::client::Producer wrapper), each on default settings; *_rate1: sample rate
         1; *_noheaders: hotkey.salt.headers=false; *_v1: hotkey.merge.contract=1 (the two
         headers on every salted record, the default before contract version 2).
Goal lines: a hot record (hot90) against static salting, a cold record (cold) against naive.

Needs hotkey-mock-kafka, hotkey-coordinator, hotkey-loadgen. Work files in $TMPDIR.
"""
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

args = [a for a in sys.argv[1:]]
REF = None
if "--ref" in args:
    i = args.index("--ref")
    REF = args[i + 1]
    del args[i:i + 2]
B = args[0]; ROUNDS = int(args[1]); DUR = args[2]
W = tempfile.mkdtemp(prefix="hotkey-route-ab-")
STRATEGIES = {
    "naive": ("naive", []),
    "static": ("static", ["--whitelist", "book-0"]),
    # static's per-record work, its salts chosen to land on 12 distinct partitions as the
    # coordinator's plan for the 90% key does (static's 8 random salts reach 6-7 of the 12)
    "static_spread": ("static_spread", ["--whitelist", "book-0", "--salts", "12"]),
}
for s in ("hotkey", "producer"):
    STRATEGIES[s] = (s, [])
    STRATEGIES[s + "_rate1"] = (s, ["--client-prop", "hotkey.sample.rate=1"])
    STRATEGIES[s + "_noheaders"] = (s, ["--client-prop", "hotkey.salt.headers=false"])
    STRATEGIES[s + "_noheaders_rate1"] = (s, ["--client-prop", "hotkey.salt.headers=false",
                                              "--client-prop", "hotkey.sample.rate=1"])
    STRATEGIES[s + "_v1"] = (s, ["--client-prop", "hotkey.merge.contract=1"])
WORKLOADS = {
    "hot90": ["--keys", "100000", "--zipf", "0", "--hot-share", "0.9", "--hot-start", "0",
              "--hot-prefix", "book-"],
    "cold": ["--keys", "100000", "--zipf", "0", "--hot-share", "0"],
}


def parse(v):
    ref = v.startswith("ref:")
    name = v[4:] if ref else v
    name, _, wl = name.partition("@")
    wl = wl or "hot90"
    if name not in STRATEGIES or wl not in WORKLOADS:
        sys.exit(f"unknown variant {v!r}: names {sorted(STRATEGIES)}, workloads {sorted(WORKLOADS)}")
    if ref and REF is None:
        sys.exit(f"variant {v!r} needs --ref REF_BIN_DIR")
    topic = "ab-" + ("ref-" if ref else "") + name.replace("_", "-") + "-" + wl
    return {"label": v, "bin": REF if ref else B, "name": name, "workload": wl, "topic": topic}


variants = [parse(v) for v in args[3].split(",")]
procs = []
bs = os.path.join(W, "bootstrap")
mock = subprocess.Popen([f"{B}/hotkey-mock-kafka", "--brokers", "3", "--bootstrap-file", bs]
                        + sum([["--topic", f"{v['topic']}:12"] for v in variants], []),
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
procs.append(mock)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
coord = subprocess.Popen([f"{B}/hotkey-coordinator", "--listen", f"127.0.0.1:{port}", "--data",
                          os.path.join(W, "data")],
                         stdout=open(os.path.join(W, "coord.log"), "w"), stderr=subprocess.STDOUT)
procs.append(coord)
try:
    for _ in range(200):
        if os.path.exists(bs) and open(bs).read().strip(): break
        time.sleep(0.1)
    boot = open(bs).read().strip()
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1); break
        except Exception: time.sleep(0.1)

    def run(v, seed, dur):
        strat, extra = STRATEGIES[v["name"]]
        out = os.path.join(W, f"{v['topic']}-{seed}.json")
        cmd = [f"{v['bin']}/hotkey-loadgen", "--bootstrap", boot, "--topic", v["topic"],
               "--strategy", strat, "--producer-id", v["topic"], "--rate", "1e7",
               "--duration", str(dur), "--seed", str(seed), "--json-out", out,
               "--value-bytes", "16"] + WORKLOADS[v["workload"]] + extra
        if strat in ("hotkey", "producer"):
            cmd += ["--coordinator", f"http://127.0.0.1:{port}"]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"), timeout=120)
        j = json.load(open(out))
        cpu_detail[v["label"]].append(
            (j.get("cpu_sys_s", 0) / j["cpu_s"],
             (j.get("context_switches_voluntary", 0) + j.get("context_switches_involuntary", 0))
             / j["records_sent"] * 1000))
        return j["records_sent"] / j["cpu_s"], j["throughput"], j["salted_records"] / j["records_sent"]

    cpu_detail = {v["label"]: [] for v in variants}  # (system share of CPU, switches per 1k)
    for v in variants: run(v, 1, 4)  # warm: topic metadata, hot list
    cpu_detail = {v["label"]: [] for v in variants}
    res = {v["label"]: [] for v in variants}
    loads = []
    for r in range(ROUNDS):
        order = variants if r % 2 == 0 else list(reversed(variants))
        for v in order:
            pcs, tp, sal = run(v, 100 + r, DUR)
            res[v["label"]].append(pcs)
            loads.append(os.getloadavg()[0])
            print(f"round {r} {v['label']:<28} {pcs/1e3:7.0f}k rec/CPU-s  {tp/1e3:7.0f}k rec/s  "
                  f"salted {sal*100:.0f}%  load {loads[-1]:.1f}", flush=True)
    for v in variants:
        if STRATEGIES[v["name"]][0] not in ("hotkey", "producer") or v["workload"] != "hot90":
            continue
        hk = json.load(urllib.request.urlopen(
            f"http://127.0.0.1:{port}/v1/hotkeys?topic={v['topic']}", timeout=5))
        for k in hk.get("keys", []):
            print(f"list of {v['topic']}: {k['key']} over {len(k['salts'])} salts on "
                  f"{len({x['partition'] for x in k['salts']})} partitions")
    med = {label: statistics.median(x) for label, x in res.items()}
    print(f"medians (records per producer CPU-second), load average {min(loads):.1f}-{max(loads):.1f}:")
    for v in variants:
        label = v["label"]
        print(f"  {label:<28} {med[label]/1e3:7.0f}k  (system CPU "
              f"{statistics.median(e[0] for e in cpu_detail[label])*100:.0f}%, "
              f"{statistics.median(e[1] for e in cpu_detail[label]):.1f} context switches per 1k records)")

    def base_of(v):
        # hot90: static salting; cold: plain librdkafka; from the same build when it ran.
        name = "static" if v["workload"] == "hot90" else "naive"
        for b in (("ref:" if v["bin"] == REF and REF != B else "") + name + "@" + v["workload"],
                  name + "@" + v["workload"], name if v["workload"] == "hot90" else None):
            if b in med or (b and b.endswith("@hot90") and b[:-6] in med):
                return b if b in med else b[:-6]
        return None

    print("goals: a hot record >= 0.9x static salting, a cold record >= 0.95x plain librdkafka")
    for v in variants:
        if STRATEGIES[v["name"]][0] not in ("hotkey", "producer"):
            continue
        b = base_of(v)
        if b:
            print(f"  {v['label']:<28} {med[v['label']] / med[b]:.3f}x {b}")
finally:
    for p in procs: p.terminate()
    for p in procs: p.wait(timeout=20)
    shutil.rmtree(W, ignore_errors=True)
