#!/usr/bin/env python3
# Instructions a hotkey-coordinator process spends per merged entry of JSON reports posted over
# HTTP (decode, admission, ingest, answer: the whole server side), counted by callgrind, so two
# builds can be compared on a busy machine. Run it twice per binary, with 0 and with N posts:
# (instructions(N) - instructions(0)) / (N * 1024) is the cost per entry. The reports are those
# of coordinator_bench's BM_Ingest (8 senders, 1,024 entries, keys user-0..20480).
#   bench/http_ingest_instructions.py build/bin/hotkey-coordinator 19200 0
#   bench/http_ingest_instructions.py build/bin/hotkey-coordinator 19280 80
import json, os, random, shutil, signal, subprocess, sys, tempfile, time, urllib.request
bin_, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ENTRIES = 1024
def report(s):
    rng = random.Random(s)
    items = {}
    for i in range(ENTRIES * 8):
        k = "user-%d" % rng.randint(0, 20 * ENTRIES)
        items[k] = items.get(k, 0) + 1 + i % 3
    top = sorted(items.items(), key=lambda kv: -kv[1])[:ENTRIES]
    total = sum(items.values())
    pc = [total // 32] * 32
    pc[0] += total - sum(pc)
    return json.dumps({"producer": "sender-%d" % s, "topic": "bench", "partitions": 32, "window_ms": 1000, "hash": "murmur2", "sample_rate": 1.0,
                       "total": total, "partition_counts": pc, "seq": 0, "list_version": 0,
                       "sent_at_ms": int(time.time() * 1000),
                       "sketch": {"capacity": ENTRIES, "min": top[-1][1], "total": total,
                                  "items": [{"key": k, "count": c, "error": 0} for k, c in top]}}).encode()
bodies = [report(s) for s in range(1, 9)]
d = tempfile.mkdtemp()
out = os.path.join(d, "cg.out")
p = subprocess.Popen(["valgrind", "--tool=callgrind", "--max-threads=4000", "--callgrind-out-file=" + out, bin_,
                      "--listen", "127.0.0.1:%d" % port, "--data", d + "/data"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(600):
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2).read(); break
    except Exception:
        time.sleep(0.5)
ok = 0
for i in range(n):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/reports" % port, data=bodies[i % 8],
                                 headers={"Content-Type": "application/json"})
    r = urllib.request.urlopen(req, timeout=60)
    ok += r.status == 200
p.send_signal(signal.SIGTERM); p.wait(timeout=300)
tot = 0
for line in open(out):
    if line.startswith("totals:") or line.startswith("summary:"):
        tot = int(line.split()[1])
print(bin_, "posts", n, "ok", ok, "instructions", tot)
shutil.rmtree(d)
