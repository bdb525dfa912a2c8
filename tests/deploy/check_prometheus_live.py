#!/usr/bin/env python3
"""deploy/prometheus/alerts.yml and the Grafana dashboard against a real Prometheus scraping a
live coordinator (issue 19).

  check_prometheus_live.py SOURCE_DIR BIN_DIR

Starts build/bin/hotkey-coordinator and Debian's `prometheus` on loopback (scrape and rule
evaluation every second) and feeds the coordinator producer reports over HTTP: naive producers
on a skewed topic, an evenly spread topic, and rejected reports (no token, broken bodies); and
when the build has them, hotkey-loadgen producers send a skewed workload through the client
library to hotkey-mock-kafka. Through Prometheus' HTTP API it then checks that

  * the skew alert fires for the skewed topic and stays silent for the even one; with the
    client fleet it stays silent where the client salts the hot key and fires where the key
    is denied; the rejection alert fires and the rejection series carry the reasons the
    runbook names;
  * the store alert fires when the coordinator's disk fills (a file-size limit on the
    process), and the target-down alert when the coordinator goes away;
  * every PromQL expression of the dashboard returns data.

The live rules are the shipped expressions with every `for:` shortened to a few seconds (the
shipped durations are minutes to hours). The shipped file itself is then evaluated by
`promtool test rules` on the series the live run produced (their real labels and values, held
for the shipped durations), and must give exactly the alerts the live Prometheus gave.

Exit 0 ok, 1 on a failed check, 77 (skipped) when prometheus, promtool or PyYAML is missing
(scripts/deps-deploy.sh installs them).
"""
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML missing (scripts/deps-deploy.sh installs python3-yaml)")
    sys.exit(77)

for tool in ("prometheus", "promtool"):
    if shutil.which(tool) is None:
        print(f"SKIP: {tool} not found (Debian package prometheus; scripts/deps-deploy.sh)")
        sys.exit(77)

PRODUCER_TOKEN = "live-producer-token-123"
OPERATOR_TOKEN = "live-operator-token-123"
PARTITIONS = 8
# Generous: ctest runs this beside CPU-heavy tests on two shared cores.
DEADLINE_S = 180
FAILURES = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def eventually(probe, timeout=DEADLINE_S, step=0.5):
    """probe() until it returns something truthy (returned) or the timeout passes (None)."""
    end = time.time() + timeout
    while True:
        try:
            got = probe()
        except (OSError, ValueError, KeyError):  # not up yet, or an unexpected answer
            got = None
        if got:
            return got
        if time.time() > end:
            return None
        time.sleep(step)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, method="GET", body=None, headers=None, timeout=30):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


# ------------------------------------------------------------------------------ coordinator

class Coordinator:
    def __init__(self, bin_dir, tmp):
        self.log_path = os.path.join(tmp, "coordinator.log")
        self.data = os.path.join(tmp, "data")
        cfg = os.path.join(tmp, "coordinator.json")
        with open(cfg, "w") as f:
            # client-salted runs in another family with another separator: the loadgen's
            # client must report crc32 (--client-prop hotkey.hash, issue 18 item 5) or every
            # report is refused as a hash mismatch and the hot key is never salted.
            json.dump({"plan_interval_ms": 200, "warmup_ms": 0, "epoch_ms": 500,
                       "window_epochs": 4, "defaults": {"min_rate": 1},
                       "topics": {"client-salted": {"hash": "crc32", "separator": "~"}}}, f)
        env = dict(os.environ, HOTKEY_OPERATOR_TOKEN="live=" + OPERATOR_TOKEN,
                   HOTKEY_PRODUCER_TOKEN=PRODUCER_TOKEN)
        self.log = open(self.log_path, "w+")

        def child_setup():
            # A write past RLIMIT_FSIZE must fail with EFBIG, not kill the process (the
            # full-disk step sets the limit later with prlimit).
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "hotkey-coordinator"), "--listen", "127.0.0.1:0", "--data",
             self.data, "--config", cfg], stderr=self.log, env=env, preexec_fn=child_setup)
        self.port = eventually(self._listening, timeout=60, step=0.1)
        if not self.port:
            self.stop()
            sys.exit("coordinator did not start:\n" + open(self.log_path).read())
        self.url = f"http://127.0.0.1:{self.port}"

    def _listening(self):
        if self.proc.poll() is not None:
            sys.exit("coordinator exited:\n" + open(self.log_path).read())
        self.log.seek(0)
        for line in self.log:
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("event") == "listening":
                return j["port"]
        return None

    def call(self, method, path, body=None, token=PRODUCER_TOKEN,
             ctype="application/json"):
        headers = {"Content-Type": ctype}
        if token:
            headers["Authorization"] = "Bearer " + token
        return http(self.url + path, method, body, headers)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)


def report(producer, topic, seq, counts, keys):
    total = sum(counts)
    items = [{"key": k, "count": c, "error": 0} for k, c in keys]
    return json.dumps({
        "producer": producer, "topic": topic, "partitions": PARTITIONS, "hash": "murmur2",
        "window_ms": 1000, "sample_rate": 1.0, "total": total, "partition_counts": counts,
        "seq": seq, "list_version": 0,
        "sketch": {"capacity": 64, "min": 0, "total": total, "items": items}}).encode()


class ClientFleet:
    """The same skewed workload (60% of records on one key) sent by hotkey-loadgen through
    the hotkey client library to the embedded mock Kafka cluster, on two topics: on
    `client-salted` the client salts the hot key as the coordinator's list says; on
    `client-denied` an operator denied the key (never salt it), so its partition stays hot.
    None when the build has no hotkey-mock-kafka or hotkey-loadgen."""

    TOPICS = ("client-salted", "client-denied")

    def __init__(self, bin_dir, tmp, coord):
        self.procs = []
        mock, loadgen = (os.path.join(bin_dir, b) for b in ("hotkey-mock-kafka",
                                                             "hotkey-loadgen"))
        if not (os.path.exists(mock) and os.path.exists(loadgen)):
            self.ok = False
            return
        self.ok = True
        boot = os.path.join(tmp, "bootstrap")
        args = [mock, "--brokers", "1", "--bootstrap-file", boot]
        for t in self.TOPICS:
            args += ["--topic", f"{t}:{PARTITIONS}"]
        self._spawn(args, os.path.join(tmp, "mock-kafka.log"))
        bootstrap = eventually(lambda: open(boot).read().strip(), timeout=60, step=0.2)
        if not bootstrap:
            sys.exit("hotkey-mock-kafka did not start")
        status, text = coord.call(
            "POST", "/v1/topics/client-denied/denies",
            json.dumps({"key": "hot-0", "reason": "ordering-critical"}).encode(),
            token=OPERATOR_TOKEN)
        if status != 200:
            sys.exit(f"deny refused: {status} {text}")
        for t in self.TOPICS:
            family = ["--client-prop", "hotkey.hash=crc32"] if t == "client-salted" else []
            self._spawn([loadgen, "--bootstrap", bootstrap, "--topic", t, "--strategy", "hotkey",
                         "--coordinator", coord.url, "--producer-id", "fleet-" + t,
                         "--client-prop", "hotkey.token=" + PRODUCER_TOKEN,
                         "--client-prop", "hotkey.report.interval.ms=250",
                         "--rate", "1000", "--duration", "3600", "--keys", "200",
                         "--zipf", "0", "--hot-share", "0.6", "--hot-keys", "1",
                         "--json-out", os.path.join(tmp, t + ".json")] + family,
                        os.path.join(tmp, t + ".log"))

    def _spawn(self, args, log):
        self.procs.append(subprocess.Popen(args, stdout=open(log, "w"),
                                           stderr=subprocess.STDOUT))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


class Feeder(threading.Thread):
    """Reports every 250 ms until stopped: three naive producers (no hotkey client, so their
    records stay where the hash puts them: one partition carries a hot seller) on `skewed`,
    one producer with evenly spread traffic on `even`, and a rejected report (no token, or a
    body that is not JSON) for every two accepted ones."""

    def __init__(self, coordinator):
        super().__init__(daemon=True)
        self.c = coordinator
        self.stopping = threading.Event()
        self.accepted = 0
        self.statuses = {}

    def run(self):
        seq = 0
        skewed = [700, 50, 50, 50, 50, 50, 25, 25]
        skewed_keys = [("seller-45", 600)] + [("seller-%d" % i, 20) for i in range(10)]
        even = [125] * PARTITIONS
        even_keys = [("user-%d" % i, 25) for i in range(40)]
        while not self.stopping.is_set():
            seq += 1
            try:
                for p in range(3):
                    self._post(report("naive-%d" % p, "skewed", seq, skewed, skewed_keys))
                self._post(report("even-0", "even", seq, even, even_keys))
                # Rejected: no token (reason unauthorized), then a broken body (decode).
                self._post(report("naive-0", "skewed", seq, skewed, skewed_keys), token=None)
                self._post(b"{not json", token=PRODUCER_TOKEN)
            except OSError:
                pass  # the coordinator is gone (the target-down step): keep trying quietly
            self.stopping.wait(0.25)

    def _post(self, body, token=PRODUCER_TOKEN):
        status, _ = self.c.call("POST", "/v1/reports", body, token=token)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if status == 200:
            self.accepted += 1


# ------------------------------------------------------------------------------ prometheus

class Prometheus:
    def __init__(self, src, tmp, target):
        self.tmp = tmp
        rules = os.path.join(tmp, "alerts-live.yml")
        with open(os.path.join(src, "deploy/prometheus/alerts.yml")) as f:
            shipped = f.read()
        # The shipped expressions, with every hold time shortened so a run takes minutes.
        live, n = re.subn(r"(?m)^(\s+)for: \S+$", r"\1for: 3s", shipped)
        if n == 0:
            sys.exit("alerts.yml has no 'for:' lines to shorten: update this test")
        with open(rules, "w") as f:
            f.write(live)
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            yaml.safe_dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                           "scrape_timeout": "1s"},
                "rule_files": [rules],
                "scrape_configs": [{
                    "job_name": "hotkey-coordinator",
                    "metrics_path": "/metrics",
                    "static_configs": [{"targets": [target]}]}]}, f)
        out = subprocess.run(["promtool", "check", "config", cfg], capture_output=True,
                             text=True)
        if out.returncode != 0:
            sys.exit("promtool check config failed:\n" + out.stdout + out.stderr)
        self.log_path = os.path.join(tmp, "prometheus.log")
        self.log = open(self.log_path, "w")
        # The port is picked, then bound by Prometheus: retry a few times on a lost race.
        for _ in range(5):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.proc = subprocess.Popen(
                ["prometheus", "--config.file=" + cfg,
                 "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
                stdout=self.log, stderr=subprocess.STDOUT)
            if eventually(self._ready, timeout=120, step=0.5):
                return
            self.stop()
        sys.exit("prometheus did not become ready:\n" + open(self.log_path).read())

    def _ready(self):
        if self.proc.poll() is not None:
            return None
        status, _ = http(self.url + "/-/ready", timeout=5)
        return status == 200

    def api(self, path, **params):
        status, body = http(self.url + path + "?" + urllib.parse.urlencode(params))
        doc = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise ValueError(f"{path} {params}: HTTP {status} {body[:300]}")
        return doc["data"]

    def query(self, expr):
        return self.api("/api/v1/query", query=expr)["result"]

    def alerts(self, name, state="firing"):
        """Alerts of that name in that state, as /api/v1/alerts gives them."""
        return [a for a in self.api("/api/v1/alerts")["alerts"]
                if a["labels"].get("alertname") == name and a["state"] == state]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ------------------------------------------------------------------------------ checks

def dashboard_exprs(src):
    with open(os.path.join(src, "deploy/grafana/hotkey-dashboard.json")) as f:
        doc = json.load(f)
    out = []

    def walk(o, title):
        if isinstance(o, dict):
            title = o.get("title", title)
            for k, v in o.items():
                if k == "expr" and isinstance(v, str):
                    out.append((title, v))
                else:
                    walk(v, title)
        elif isinstance(o, list):
            for v in o:
                walk(v, title)

    walk(doc, "")
    return out


def promtool_replay(src, tmp, live_alerts):
    """Runs the shipped alerts.yml (unshortened) under promtool on the live series, held at
    their live values, and expects exactly the alerts the live Prometheus fired, with the same
    labels and annotations."""
    tests = {"rule_files": [os.path.join(src, "deploy/prometheus/alerts.yml")],
             "evaluation_interval": "1m",
             "tests": []}
    for name, (minutes, alerts, inputs) in live_alerts.items():
        input_series = []
        for labels, value in inputs:
            sel = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
            input_series.append({"series": f'{labels["__name__"]}{{{sel}}}',
                                 "values": f"{float(value)!r}+0x{minutes + 10}"})
        exp = [{"exp_labels": {k: v for k, v in a["labels"].items() if k != "alertname"},
                "exp_annotations": a["annotations"]} for a in alerts]
        tests["tests"].append({"interval": "1m", "input_series": input_series,
                               "alert_rule_test": [{"eval_time": f"{minutes + 5}m",
                                                    "alertname": name, "exp_alerts": exp}]})
    path = os.path.join(tmp, "alerts_live_test.yml")
    with open(path, "w") as f:
        yaml.safe_dump(tests, f, width=1000)
    out = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True)
    check(out.returncode == 0, "promtool test rules: the shipped rules on the live series give "
          "the live alerts (" + ", ".join(live_alerts) + ")" +
          ("" if out.returncode == 0 else ":\n" + out.stdout + out.stderr))


def main():
    src, bin_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "deploy/prometheus/alerts.yml")) as f:
        shipped = yaml.safe_load(f)
    hold_minutes = {}
    for g in shipped["groups"]:
        for r in g["rules"]:
            m = re.fullmatch(r"(\d+)([smh])", str(r.get("for", "0s")))
            hold_minutes[r["alert"]] = int(m.group(1)) * {"s": 1 / 60, "m": 1, "h": 60}[
                m.group(2)] if m else 0

    with tempfile.TemporaryDirectory(prefix="hotkey-prometheus-live-") as tmp:
        coord = Coordinator(bin_dir, tmp)
        prom = None
        fleet = None
        feeder = Feeder(coord)
        try:
            prom = Prometheus(src, tmp, f"127.0.0.1:{coord.port}")
            fleet = ClientFleet(bin_dir, tmp, coord)
            feeder.start()
            run(src, tmp, coord, prom, fleet, hold_minutes)
        finally:
            feeder.stopping.set()
            feeder.join(timeout=30)
            if fleet:
                fleet.stop()
            coord.stop()
            if prom:
                prom.stop()
            if FAILURES:
                for name in ("coordinator.log", "prometheus.log"):
                    p = os.path.join(tmp, name)
                    if os.path.exists(p):
                        print(f"--- {name} (last 40 lines)")
                        print("".join(open(p, errors="replace").readlines()[-40:]))
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


def run(src, tmp, coord, prom, fleet, hold_minutes):
    up = eventually(lambda: [r for r in prom.query('up{job="hotkey-coordinator"} == 1')])
    if not check(bool(up), "Prometheus scrapes the coordinator (up == 1)"):
        return

    # Skew: the naive producers' topic goes above 2 and fires; the even topic stays below.
    firing = eventually(lambda: [a for a in prom.alerts("HotkeyPartitionSkewHigh")
                                 if a["labels"].get("topic") == "skewed"])
    check(bool(firing), "HotkeyPartitionSkewHigh fires for the skewed topic")
    even = prom.query('hotkey_partition_skew{topic="even"}')
    check(bool(even) and float(even[0]["value"][1]) < 2,
          f"the even topic's skew is below 2 ({even[0]['value'][1] if even else 'no series'})")
    for state in ("pending", "firing"):
        check(not [a for a in prom.alerts("HotkeyPartitionSkewHigh", state)
                   if a["labels"].get("topic") == "even"],
              f"HotkeyPartitionSkewHigh is not {state} for the even topic")

    # The same skewed workload through the hotkey client: silent while the client salts the
    # hot key, firing where an operator denied it (a skew the client must not fix).
    if fleet.ok:
        denied = eventually(lambda: [a for a in prom.alerts("HotkeyPartitionSkewHigh")
                                     if a["labels"].get("topic") == "client-denied"])
        check(bool(denied), "HotkeyPartitionSkewHigh fires for the client fleet's topic whose "
              "hot key is denied")
        salted = eventually(lambda: [r for r in prom.query(
            'max_over_time(hotkey_partition_skew{topic="client-salted"}[5s]) < 2 and '
            'hotkey_hot_keys{topic="client-salted"} > 0')], timeout=DEADLINE_S)
        check(bool(salted), "the client fleet's salted topic settles below skew 2 with its "
              "hot key listed")
        check(not prom.query('hotkey_reports_rejected_total{reason="hash_mismatch"} > 0'),
              "no report was refused as a hash mismatch (the crc32 topic's client reports crc32)")
        if salted:
            time.sleep(5)
            check(not [a for a in prom.alerts("HotkeyPartitionSkewHigh")
                       if a["labels"].get("topic") == "client-salted"],
                  "HotkeyPartitionSkewHigh is not firing for the salted client topic")
    else:
        print("note: no hotkey-mock-kafka/hotkey-loadgen in the build: client fleet skipped")

    # Rejections: the alert fires and the series carry the reasons the runbook names.
    rejected = eventually(lambda: prom.alerts("HotkeyReportsRejected"))
    check(bool(rejected), "HotkeyReportsRejected fires (1 report in 3 rejected)")
    for reason in ("unauthorized", "decode"):
        got = eventually(lambda: prom.query(
            f'increase(hotkey_reports_rejected_total{{reason="{reason}"}}[1m]) > 0'))
        check(bool(got), f'hotkey_reports_rejected_total{{reason="{reason}"}} increases')
    with open(os.path.join(src, "docs/OPERATIONS.md")) as f:
        ops = f.read()
    section = ops.split("### HotkeyReportsRejected", 1)[1].split("\n### ", 1)[0]
    named = set()
    for row in section.splitlines():
        cells = row.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            named.update(re.findall(r"`([a-z_]+)`", cells[1]))
    scraped = {r["metric"].get("reason") for r in prom.query("hotkey_reports_rejected_total")}
    check(named and named <= scraped,
          f"every reason the runbook names is a scraped series ({sorted(named - scraped)} missing)")
    check({"unauthorized", "decode"} <= named, "the runbook names unauthorized and decode")

    # Rules that must stay silent while the coordinator is healthy and scraped.
    for name in ("HotkeyCoordinatorDown", "HotkeyCoordinatorAbsent", "HotkeyStoreUnhealthy",
                 "HotkeyProducersNotReporting"):
        check(not prom.alerts(name) and not prom.alerts(name, "pending"),
              f"{name} is silent while the coordinator is up")

    # Every dashboard panel query has data (Grafana's $topic "All" is .*).
    coord.call("GET", "/readyz")  # a synced store write for the store latency panels
    time.sleep(2)
    for title, expr in dashboard_exprs(src):
        q = expr.replace("$topic", ".*").replace("$__rate_interval", "1m")
        got = eventually(lambda: prom.query(q), timeout=60)
        check(bool(got), f"dashboard panel '{title}': {expr} returns data")

    # Each live alert with the series behind it, replayed under promtool at the end.
    live = {}

    def keep_live(name, query):
        alerts = prom.alerts(name)
        inputs = [(r["metric"], r["value"][1]) for r in prom.query(query)]
        # Hold the alert's own value, so its annotation (which may print $value) is the same.
        for a in alerts:
            for i, (labels, _) in enumerate(inputs):
                if all(labels.get(k) == v for k, v in a["labels"].items()
                       if k in ("topic", "instance")):
                    inputs[i] = (labels, a["value"])
        live[name] = (int(hold_minutes[name]), alerts, inputs)

    keep_live("HotkeyPartitionSkewHigh", "hotkey_partition_skew")

    # Full disk: cap the size any file of the coordinator may grow to just above the largest
    # file of its store; operator writes then fail, and the store alert fires.
    largest = max(os.path.getsize(os.path.join(coord.data, f)) for f in os.listdir(coord.data)
                  if os.path.isfile(os.path.join(coord.data, f)))
    cap = largest + 2048
    resource.prlimit(coord.proc.pid, resource.RLIMIT_FSIZE, (cap, resource.RLIM_INFINITY))
    # Pin and unpin one key (every call is a synced write plus an audit entry), so no limit on
    # the number of pins stops the loop before the disk is full.
    failed = None
    body = json.dumps({"key": "fill", "reason": "fill the disk"}).encode()
    for i in range(5000):
        if i % 2 == 0:
            status, text = coord.call("POST", "/v1/topics/skewed/pins", body,
                                      token=OPERATOR_TOKEN)
        else:
            status, text = coord.call("DELETE", "/v1/topics/skewed/pins?key=fill",
                                      token=OPERATOR_TOKEN)
        if status >= 500:
            failed = (status, text[:200])
            break
    check(failed is not None, f"operator writes fail once the disk is full ({failed})")
    store = eventually(lambda: prom.alerts("HotkeyStoreUnhealthy"))
    check(bool(store), "HotkeyStoreUnhealthy fires on a full disk")
    if store:
        keep_live("HotkeyStoreUnhealthy", "hotkey_store_healthy")
    resource.prlimit(coord.proc.pid, resource.RLIMIT_FSIZE,
                     (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    # The coordinator goes away: the target-down rule fires, the absent rule does not.
    coord.stop()
    down = eventually(lambda: prom.alerts("HotkeyCoordinatorDown"))
    check(bool(down), "HotkeyCoordinatorDown fires when the coordinator is gone")
    check(not prom.alerts("HotkeyCoordinatorAbsent"),
          "HotkeyCoordinatorAbsent stays silent (the target still exists)")
    if down:
        keep_live("HotkeyCoordinatorDown", 'up{job="hotkey-coordinator"}')

    # The live alerts, replayed under promtool with the shipped (unshortened) rules.
    promtool_replay(src, tmp, live)


if __name__ == "__main__":
    sys.exit(main())
