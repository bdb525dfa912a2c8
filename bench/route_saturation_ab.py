#!/usr/bin/env python3
"""Saturation A/B of the send path (issue 14 item 3): one unthrottled hotkey-loadgen producer
per run, the hot90 workload (one key 90%, 12 partitions, surge on from the start), variants
alternated round by round (reversed every other round) on one mock cluster and coordinator,
so machine load drifts over all of them alike. Prints records per producer CPU-second per run
and the per-variant medians; figures in docs/BENCHMARKS.md ("Client").

  bench/route_saturation_ab.py BIN_DIR ROUNDS SECONDS VARIANT[,VARIANT...]
  e.g. bench/route_saturation_ab.py build/bin 3 5 naive,static,static_spread,hotkey,\
       hotkey_rate1,hotkey_noheaders,hotkey_noheaders_rate1

Needs hotkey-mock-kafka, hotkey-coordinator, hotkey-loadgen. Work files in $TMPDIR.
"""
import json, os, socket, subprocess, sys, time, statistics, urllib.request
B = sys.argv[1]; ROUNDS = int(sys.argv[2]); DUR = sys.argv[3]
import shutil, tempfile
W = tempfile.mkdtemp(prefix="hotkey-route-ab-")
V = {
  "naive": ("naive", []),
  "static": ("static", ["--whitelist", "book-0"]),
  # static's per-record work, its salts chosen to land on 12 distinct partitions as the
  # coordinator's plan for the 90% key does (static's 8 random salts reach 6-7 of the 12)
  "static_spread": ("static_spread", ["--whitelist", "book-0", "--salts", "12"]),
  "hotkey": ("hotkey", []),
  "hotkey_rate1": ("hotkey", ["--client-prop", "hotkey.sample.rate=1"]),
  "hotkey_noheaders": ("hotkey", ["--client-prop", "hotkey.salt.headers=false"]),
  "hotkey_noheaders_rate1": ("hotkey", ["--client-prop", "hotkey.salt.headers=false", "--client-prop", "hotkey.sample.rate=1"]),
}
names = sys.argv[4].split(",")
procs = []
bs = os.path.join(W, "bootstrap")
if os.path.exists(bs): os.remove(bs)
mock = subprocess.Popen([f"{B}/hotkey-mock-kafka", "--brokers", "3", "--bootstrap-file", bs] + sum([["--topic", f"ab-{n}:12"] for n in names], []), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
procs.append(mock)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
coord = subprocess.Popen([f"{B}/hotkey-coordinator", "--listen", f"127.0.0.1:{port}", "--data", os.path.join(W, "data")], stdout=open(os.path.join(W, "coord.log"), "w"), stderr=subprocess.STDOUT)
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
    def run(n, seed, dur):
        strat, extra = V[n]
        out = os.path.join(W, f"{n}-{seed}.json")
        args = [f"{B}/hotkey-loadgen", "--bootstrap", boot, "--topic", f"ab-{n}", "--strategy", strat,
                "--producer-id", f"ab-{n}", "--rate", "1e7", "--duration", str(dur), "--seed", str(seed),
                "--json-out", out, "--value-bytes", "16", "--keys", "100000", "--zipf", "0",
                "--hot-share", "0.9", "--hot-start", "0", "--hot-prefix", "book-"] + extra
        if strat == "hotkey": args += ["--coordinator", f"http://127.0.0.1:{port}"]
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"), timeout=120)
        j = json.load(open(out))
        cpu_detail[n].append((j.get("cpu_sys_s", 0) / j["cpu_s"],
                         (j.get("context_switches_voluntary", 0)
                          + j.get("context_switches_involuntary", 0)) / j["records_sent"] * 1000))
        return j["records_sent"] / j["cpu_s"], j["throughput"], j["salted_records"] / j["records_sent"]
    cpu_detail = {n: [] for n in names}  # (system share of CPU, context switches per 1k records)
    for n in names: run(n, 1, 4)  # warm: topic metadata, hot list
    cpu_detail = {n: [] for n in names}
    res = {n: [] for n in names}
    for r in range(ROUNDS):
        order = names if r % 2 == 0 else list(reversed(names))
        for n in order:
            pcs, tp, sal = run(n, 100 + r, DUR)
            res[n].append(pcs)
            print(f"round {r} {n:<24} {pcs/1e3:7.0f}k rec/CPU-s  {tp/1e3:7.0f}k rec/s  salted {sal*100:.0f}%  load {os.getloadavg()[0]:.1f}", flush=True)
    for n in names:
        if V[n][0] != "hotkey":
            continue
        hk = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/hotkeys?topic=ab-{n}", timeout=5))
        for k in hk.get("keys", []):
            print(f"list of ab-{n}: {k['key']} over {len(k['salts'])} salts on "
                  f"{len({x['partition'] for x in k['salts']})} partitions")
    print("medians (records per producer CPU-second):")
    base = statistics.median(res["static"]) if "static" in res else None
    for n in names:
        m = statistics.median(res[n])
        sys_share = statistics.median(e[0] for e in cpu_detail[n])
        switches = statistics.median(e[1] for e in cpu_detail[n])
        print(f"  {n:<24} {m/1e3:7.0f}k" + (f"  {m/base:.2f}x static" if base else "")
              + f"  (system CPU {sys_share*100:.0f}%, {switches:.1f} context switches per 1k records)")
finally:
    for p in procs: p.terminate()
    for p in procs: p.wait(timeout=20)
    shutil.rmtree(W, ignore_errors=True)
