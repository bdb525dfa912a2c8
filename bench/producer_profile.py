#!/usr/bin/env python3
"""Where one producer process's CPU goes (issue 14 item 3): the whole hotkey-loadgen process
under callgrind (--separate-threads=yes) for a fixed record count, on the hot90 workload (one
key 90% of the records, 12 partitions, surge on from the start), one run per variant, with a
librdkafka mock cluster and a coordinator outside valgrind. Instruction counts, so the load
other processes put on the machine does not move them.

  bench/producer_profile.py BIN_DIR RECORDS VARIANT[,VARIANT...] [LINGER_MS]
  e.g. bench/producer_profile.py build/bin 200000 static,static_spread,hotkey_noheaders,hotkey

Variants are those of bench/route_saturation_ab.py. The hot key book-0 is pinned on the
coordinator with 12 salts before the hotkey runs (what the coordinator plans for a 90% key on
12 partitions), so every one of its records is salted from the first. LINGER_MS (default
2000): callgrind runs the producer ~50x slower than native, so librdkafka's linger.ms is
stretched alike to keep batches about as large (records per batch) as in a native
unthrottled run with the loadgen's linger.ms=50. Batch sizes under valgrind still depend on
timing: compare variants at the same LINGER_MS, and the broker threads' share with care.

Prints, per variant, instructions per record: the application thread (split into librdkafka's
produce call, librdkafka's header construction, delivery-report polling, and the rest: the
strategy's own code, routing, sampling, workload generation), librdkafka's broker threads,
librdkafka's main thread, and every other thread (the hotkey client's reporter and list
subscriber). Work files in $TMPDIR (kept with --keep as KEEP=1 in the environment).
"""
import glob, json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.request

B = sys.argv[1]
N = int(sys.argv[2])
names = sys.argv[3].split(",")
LINGER = sys.argv[4] if len(sys.argv) > 4 else "2000"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
V = {
    "naive": ("naive", []),
    "static": ("static", ["--whitelist", "book-0"]),
    "static_spread": ("static_spread", ["--whitelist", "book-0", "--salts", "12"]),
    "hotkey": ("hotkey", []),
    # The sample rate hotkey.sample.rate=auto takes at 600k records/s (16,384 samples a 500 ms
    # window): under valgrind the producer is too slow for auto to go below 1.
    "hotkey_auto600k": ("hotkey", ["--client-prop", "hotkey.sample.rate=0.0546"]),
    "hotkey_noheaders_auto600k": ("hotkey", ["--client-prop", "hotkey.salt.headers=false",
                                             "--client-prop", "hotkey.sample.rate=0.0546"]),
    "hotkey_v1_auto600k": ("hotkey", ["--client-prop", "hotkey.merge.contract=1",
                                      "--client-prop", "hotkey.sample.rate=0.0546"]),
    "producer_auto600k": ("producer", ["--client-prop", "hotkey.sample.rate=0.0546"]),
    "hotkey_rate1": ("hotkey", ["--client-prop", "hotkey.sample.rate=1"]),
    "hotkey_noheaders": ("hotkey", ["--client-prop", "hotkey.salt.headers=false"]),
    "hotkey_noheaders_rate1": ("hotkey", ["--client-prop", "hotkey.salt.headers=false",
                                          "--client-prop", "hotkey.sample.rate=1"]),
}
W = tempfile.mkdtemp(prefix="hotkey-producer-profile-")
procs = []

# Application-thread functions measured inclusively (substring of callgrind_annotate's name).
APP_PARTS = [
    ("strategy send (all of it)", ["RewritingStrategy::send(", "HotkeyStrategy::send(",
                                   "ProducerStrategy::send("]),
    ("librdkafka produce call", ["rd_kafka_producev", "rd_kafka_produceva"]),
    ("librdkafka header build", ["rd_kafka_headers_new", "rd_kafka_header_add"]),
    ("delivery reports (poll/flush)", ["KafkaProducer::poll(", "KafkaProducer::flush(",
                                       "client::Producer::poll(", "client::Producer::flush("]),
]
LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*(\[[^\]]*\])?\s*$")


def annotate(path):
    """Function name -> inclusive Ir, the thread's entry function (the first below
    start_thread or main's caller) with its object file."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no",
                          path], capture_output=True, text=True).stdout
    fns, order = {}, []
    for line in out.splitlines():
        if "=>" in line:
            continue
        m = LINE.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        name, obj = m.group(2), m.group(3) or ""
        if "PROGRAM TOTALS" in name:
            continue
        order.append((name, obj))
        if obj:  # a function's own row; rows without an object are code inlined into it
            fns[name] = max(fns.get(name, 0), ir)
    entry = ("", "")
    for name, obj in order:
        if not re.search(r"clone|start_thread|dl_|ld-linux|below main|libc_start", name + obj):
            entry = (name, obj)
            break
    return fns, entry


def incl(fns, subs):
    # The outermost of the named functions (one does not call the other here): sum by name.
    s = 0
    for name, ir in fns.items():
        fn = name.split(":", 1)[-1] if name.startswith("???:") else name
        if any(fn == x or (x.endswith("(") and re.search(r"::" + re.escape(x), fn))
               for x in subs):
            s += ir
    return s


def classify(threads):
    """[(fns, entry)] -> a kind per thread."""
    rdk = {}
    for fns, (name, obj) in threads:
        if "librdkafka" in obj:
            rdk[name] = rdk.get(name, 0) + 1
    broker = max(rdk, key=rdk.get) if rdk else None
    kinds = []
    for fns, (name, obj) in threads:
        if any(n.endswith(":main") and "loadgen" in n for n in fns):
            kinds.append("application thread")
        elif "librdkafka" in obj:
            kinds.append("librdkafka broker threads" if name == broker
                         else "librdkafka main thread")
        else:
            kinds.append("hotkey client threads (reporter, lists)")
    return kinds


try:
    bs = os.path.join(W, "bootstrap")
    mock = subprocess.Popen([f"{B}/hotkey-mock-kafka", "--brokers", "3", "--bootstrap-file", bs]
                            + sum([["--topic", f"prof-{n}:12"] for n in names], []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(mock)
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    coord = subprocess.Popen([f"{B}/hotkey-coordinator", "--listen", f"127.0.0.1:{port}",
                              "--data", os.path.join(W, "data"),
                              "--operator-token", "profile=profile-token"],
                             stdout=open(os.path.join(W, "coord.log"), "w"), stderr=subprocess.STDOUT)
    procs.append(coord)
    for _ in range(300):
        if os.path.exists(bs) and open(bs).read().strip():
            break
        time.sleep(0.1)
    boot = open(bs).read().strip()
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/readyz", timeout=1); break
        except Exception:
            time.sleep(0.1)
    results = {}
    for n in names:
        strat, extra = V[n]
        topic = f"prof-{n}"
        if strat in ("hotkey", "producer"):
            body = json.dumps({"key": "book-0", "reason": "producer profile", "salts": 12}).encode()
            for _ in range(100):
                try:
                    req = urllib.request.Request(f"{url}/v1/topics/{topic}/pins", data=body,
                                                 headers={"Content-Type": "application/json",
                                                          "Authorization": "Bearer profile-token"})
                    urllib.request.urlopen(req, timeout=5); break
                except Exception as e:  # the topic appears with its first report
                    last = e; time.sleep(0.2)
            else:
                raise SystemExit(f"pin on {topic}: {last}")
            # A short native run tells the coordinator the partition count (the pin is listed
            # then); the profiled run waits for that list before its first record.
            subprocess.run([f"{B}/hotkey-loadgen", "--bootstrap", boot, "--topic", topic,
                            "--strategy", "hotkey", "--producer-id", f"warm-{n}", "--rate", "2000",
                            "--duration", "2", "--coordinator", url, "--json-out",
                            os.path.join(W, f"warm-{n}.json")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        out = os.path.join(W, f"{n}.json")
        cg = os.path.join(W, f"cg.{n}")
        args = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
                f"--callgrind-out-file={cg}.%p",
                f"{B}/hotkey-loadgen", "--bootstrap", boot, "--topic", topic, "--strategy", strat,
                "--producer-id", f"prof-{n}", "--rate", "1e9", "--duration", "3600",
                "--records", str(N), "--seed", "100", "--json-out", out, "--value-bytes", "16",
                "--keys", "100000", "--zipf", "0", "--hot-share", "0.9", "--hot-start", "0",
                "--hot-prefix", "book-", "--kafka-prop", f"linger.ms={LINGER}"] + extra
        if strat in ("hotkey", "producer"):
            args += ["--coordinator", url, "--wait-list-ms", "30000"]
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"),
                       timeout=1800)
        j = json.load(open(out))
        rows = {}
        app = {}
        threads = [annotate(f) for f in sorted(glob.glob(cg + ".*"))]
        threads = [t for t in threads if t[0]]
        for (fns, _), k in zip(threads, classify(threads)):
            if k == "application thread":
                total = max(ir for name, ir in fns.items() if name.endswith(":main"))
                app = {"total": total}
                for label, subs in APP_PARTS:
                    app[label] = incl(fns, subs)
            else:
                total = max(fns.values()) if fns else 0
            rows[k] = rows.get(k, 0) + total
        results[n] = (j, rows, app)
        sent = j["records_sent"]
        print(f"== {n}: {sent} records, salted {j['salted_records'] / sent * 100:.1f}%, "
              f"linger.ms={LINGER}", flush=True)
        print(f"  application thread            {app['total'] / sent:8.0f} instructions/record")
        send = app["strategy send (all of it)"]
        lib = app["librdkafka produce call"] + app["librdkafka header build"]
        print(f"    {'strategy send':<30}{send / sent:8.0f}")
        print(f"      {'librdkafka produce call':<28}{app['librdkafka produce call'] / sent:8.0f}")
        print(f"      {'librdkafka header build':<28}{app['librdkafka header build'] / sent:8.0f}")
        print(f"      {'the strategy (route, sample, key)':<28}{(send - lib) / sent:8.0f}")
        dr = app["delivery reports (poll/flush)"]
        print(f"    {'delivery reports (poll/flush)':<30}{dr / sent:8.0f}")
        print(f"    {'loadgen driver (workload)':<30}{(app['total'] - send - dr) / sent:8.0f}")
        for k, v in sorted(rows.items()):
            if k != "application thread":
                print(f"  {k:<30}{v / sent:8.0f}")
        print(f"  {'process total':<30}{sum(rows.values()) / sent:8.0f}", flush=True)
    print("summary, instructions per record: | variant | strategy's own code | librdkafka produce"
          " + headers (app thread) | delivery reports | broker threads | client threads |"
          " process total |")
    for n in names:
        j, rows, app = results[n]
        sent = j["records_sent"]
        send = app["strategy send (all of it)"]
        lib = app["librdkafka produce call"] + app["librdkafka header build"]
        cells = [send - lib, lib, app["delivery reports (poll/flush)"],
                 rows.get("librdkafka broker threads", 0),
                 rows.get("hotkey client threads (reporter, lists)", 0), sum(rows.values())]
        print(f"| {n} | " + " | ".join(f"{c / sent:,.0f}" for c in cells) + " |")
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=20)
    if os.environ.get("KEEP") == "1":
        print("work files kept in", W)
    else:
        shutil.rmtree(W, ignore_errors=True)
