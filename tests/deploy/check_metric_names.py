#!/usr/bin/env python3
"""Every metric (and reason/scope label value) that deploy/prometheus/alerts.yml, the Grafana
dashboard and docs/OPERATIONS.md name exists in a live coordinator's /metrics (issues 18, 19).

  check_metric_names.py SOURCE_DIR BIN_DIR

Starts build/bin/hotkey-coordinator on loopback with a fresh data dir, sends one report,
waits for a plan, calls /readyz, scrapes /metrics and compares. Exit 1 listing every name that
does not exist; 77 (skipped) without PyYAML.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import yaml
except ImportError:
    print("PyYAML missing (scripts/deps-deploy.sh installs python3-yaml): skipped")
    sys.exit(77)

NAME = re.compile(r"\bhotkey_[a-z0-9_]+")
LABEL = re.compile(r"\b(reason|scope)\s*=\s*\"([^\"]+)\"")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")


def start(bin_dir, tmp):
    log = open(os.path.join(tmp, "log"), "w+")
    cfg = os.path.join(tmp, "config.json")
    with open(cfg, "w") as f:
        json.dump({"plan_interval_ms": 200, "warmup_ms": 0}, f)
    env = dict(os.environ, HOTKEY_OPERATOR_TOKEN="checker=checker-operator-token")
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "hotkey-coordinator"), "--listen", "127.0.0.1:0", "--data",
         os.path.join(tmp, "data"), "--config", cfg], stderr=log, env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        log.seek(0)
        for line in log:
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("event") == "listening":
                return proc, j["port"]
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    log.seek(0)
    sys.exit("coordinator did not start:\n" + log.read())


def http(port, method, path, body=None, ctype="application/json"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def report():
    items = [{"key": "k%d" % i, "count": 100 - i, "error": 0} for i in range(8)]
    total = sum(i["count"] for i in items)
    counts = [0] * 4
    counts[0] = total
    return json.dumps({
        "producer": "checker", "topic": "orders", "partitions": 4, "hash": "murmur2",
        "window_ms": 1000, "sample_rate": 1.0, "total": total, "partition_counts": counts,
        "seq": 1, "sketch": {"capacity": 64, "min": 0, "total": total, "items": items}}).encode()


def live_metrics(text):
    """{family name: set of (label, value) pairs seen}, histogram families included."""
    families, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()[:4]
            types[name] = kind
            families.setdefault(name, set())
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?", line)
            name = m.group(1)
            for suffix in HIST_SUFFIXES:
                if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
                    name = name[: -len(suffix)]
            for lv in re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""):
                families.setdefault(name, set()).add(lv)
    return families, types


def exprs_of_dashboard(doc):
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "expr" and isinstance(v, str):
                out.append(v)
            else:
                out.extend(exprs_of_dashboard(v))
    elif isinstance(doc, list):
        for v in doc:
            out.extend(exprs_of_dashboard(v))
    return out


def main():
    src, bin_dir = sys.argv[1], sys.argv[2]
    sources = {}
    with open(os.path.join(src, "deploy/prometheus/alerts.yml")) as f:
        rules = yaml.safe_load(f)
    sources["deploy/prometheus/alerts.yml"] = [
        r["expr"] for g in rules["groups"] for r in g["rules"]]
    with open(os.path.join(src, "deploy/grafana/hotkey-dashboard.json")) as f:
        sources["deploy/grafana/hotkey-dashboard.json"] = exprs_of_dashboard(json.load(f))
    with open(os.path.join(src, "docs/OPERATIONS.md")) as f:
        ops = f.read()
    sources["docs/OPERATIONS.md"] = [ops]
    # The runbook's reason table: | `reason` | or | `a` / `b` | rows under HotkeyReportsRejected.
    section = ops.split("### HotkeyReportsRejected", 1)[1].split("\n### ", 1)[0]
    runbook_reasons = set()
    for row in section.splitlines():
        cells = row.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            runbook_reasons.update(re.findall(r"`([a-z_]+)`", cells[1]))

    with tempfile.TemporaryDirectory(prefix="hotkey-metric-names-") as tmp:
        proc, port = start(bin_dir, tmp)
        try:
            status, body = http(port, "POST", "/v1/reports", report())
            if status != 200:
                sys.exit(f"report refused: {status} {body}")
            time.sleep(1.0)  # a plan sets the per-topic gauges
            http(port, "GET", "/readyz")
            status, text = http(port, "GET", "/metrics")
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    families, _ = live_metrics(text)

    missing = []
    for where, texts in sources.items():
        for t in texts:
            for name in set(NAME.findall(t)):
                base = name
                for suffix in HIST_SUFFIXES:
                    if name.endswith(suffix) and name[: -len(suffix)] in families:
                        base = name[: -len(suffix)]
                if base not in families:
                    missing.append(f"{where}: metric {name} is not exported")
            for label, value in LABEL.findall(t):
                if not any((label, value) in labels for labels in families.values()):
                    missing.append(f"{where}: no series has {label}=\"{value}\"")
    reasons = {v for (k, v) in families.get("hotkey_reports_rejected_total", set())
               if k == "reason"}
    for r in sorted(runbook_reasons - reasons):
        missing.append(f"docs/OPERATIONS.md HotkeyReportsRejected: reason `{r}` is never emitted")
    for r in sorted(reasons - runbook_reasons):
        missing.append(f"docs/OPERATIONS.md HotkeyReportsRejected: reason `{r}` is not in the table")
    if missing:
        print("\n".join(sorted(set(missing))))
        return 1
    print(f"ok: {sum(len(v) for v in sources.values())} expressions/pages checked against "
          f"{len(families)} live metric families; runbook reasons {sorted(runbook_reasons)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
