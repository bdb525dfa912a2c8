#!/usr/bin/env python3
"""Live view for scripts/demo.sh: broker-side partition rates, max/avg before and after
salting, time from surge to salting in every producer, and the coordinator's hot keys with
their salt tables. Reads only: the brokers (hotkey-watch), the coordinator's HTTP API and the
producers' status files. Ends when every producer is done, or on Ctrl-C."""

import argparse
import glob
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

BARS = " ▁▂▃▄▅▆▇█"


def end_offsets(watch, bootstrap, topic):
    try:
        out = subprocess.run([watch, "--bootstrap", bootstrap, "--topic", topic, "--once",
                              "--json"], capture_output=True, text=True, timeout=20)
        return json.loads(out.stdout)["end_offsets"] if out.returncode == 0 else None
    except (subprocess.TimeoutExpired, ValueError, KeyError):
        return None


def window_balance(watch, bootstrap, topic, from_ms, to_ms, start_offsets=None):
    """max/avg of the records whose timestamps fall in [from_ms, to_ms), read back from the
    brokers (exact whatever the delivery lag), starting at `start_offsets` when known."""
    cmd = [watch, "--bootstrap", bootstrap, "--topic", topic, "--window",
           f"{int(from_ms)}:{int(to_ms)}"]
    if start_offsets:
        cmd += ["--start-offsets", ",".join(str(o) for o in start_offsets)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        d = json.loads(out.stdout)
        return d["max_avg"], d["total"]
    except (subprocess.TimeoutExpired, ValueError, KeyError) as e:
        why = out.stderr.strip().splitlines()[-1] if "out" in locals() and out.stderr else str(e)
        return None, why


def get_json(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return json.loads(r.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def statuses(status_dir):
    out = []
    for f in sorted(glob.glob(os.path.join(status_dir, "*.status"))):
        try:
            out.append(json.load(open(f)))
        except (OSError, ValueError):
            pass
    return out


def key_name(k):
    return k.get("key", "<b64:" + k.get("key_b64", "?") + ">")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--watch", required=True, help="path to hotkey-watch")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--coordinator", required=True,
                    help="coordinator URL; comma-separated URLs in cluster mode (the first "
                         "that answers is read)")
    ap.add_argument("--cluster", action="store_true",
                    help="cluster mode: also show which coordinator owns the topic")
    ap.add_argument("--status-dir", required=True)
    ap.add_argument("--producers", type=int, required=True)
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--surge-prefix", default="flash-", help="names of the surge keys")
    ap.add_argument("--start-at-ms", type=int, required=True, help="the fleet's schedule start")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds of fully salted traffic measured after a surge is salted")
    args = ap.parse_args()

    prev, prev_t = None, None
    surges = {}  # surge key -> (max/avg before, records, max/avg after, records, since, done)
    offsets_before = {}  # surge key -> end offsets read before its surge began
    t_start = time.time()
    try:
        while True:
            time.sleep(args.interval)
            st = statuses(args.status_dir)
            offs = end_offsets(args.watch, args.bootstrap, args.topic)
            now = time.time()
            urls = args.coordinator.split(",")
            lst = None
            for url in urls:
                lst = get_json(f"{url}/v1/hotkeys?topic={args.topic}")
                if lst is not None:
                    break
            t_run = max((s.get("t_s", 0) for s in st), default=now - t_start)
            lines = [f"--- t={t_run:5.1f}s " + "-" * 60]
            if offs is not None and prev is not None:
                delta = [a - b for a, b in zip(offs, prev)]
                secs = now - prev_t
                total = sum(delta)
                avg = total / len(delta) if delta else 0
                ma = max(delta) / avg if avg > 0 else 0
                idle = sum(1 for d in delta if d <= 0) / len(delta)
                mx = max(max(delta), 1)
                bar = "".join(BARS[min(8, max(0, d * 8 // mx))] for d in delta)
                lines.append(f"broker  {total/secs:8.0f} rec/s   max/avg {ma:5.2f}   "
                             f"idle {idle*100:3.0f}%   |{bar}|")
            for key, (ma_b, n_b, ma_a, n_a, since, done) in surges.items():
                if ma_b is None or ma_a is None:
                    lines.append(f"{key}: salted everywhere {done - since:.2f} s after the "
                                 f"surge (before/after balance not read back: {n_b or n_a})")
                    continue
                lines.append(f"{key}: max/avg {ma_b:.2f} from the surge (t={since:.0f}s) until "
                             f"every producer salted it ({done - since:.2f} s later); "
                             f"{ma_a:.2f} over the next {args.settle:.0f} s")
            if args.cluster:
                alive = [(u, get_json(f"{u}/v1/cluster")) for u in urls]
                alive = [(u, c) for u, c in alive if c is not None]
                owner = next((c.get("owners", {}).get(args.topic) for _, c in alive
                              if c.get("owners", {}).get(args.topic)), None)
                lines.append(f"cluster: {len(alive)}/{len(urls)} coordinators answering; "
                             f"{args.topic} owned by {owner or '(nobody yet)'}")
            if lst is not None:
                keys = lst.get("keys", [])
                lines.append(f"hot keys (list version {lst.get('version')}, "
                             f"{lst.get('partitions')} partitions): {len(keys) or 'none'}")
                for k in keys[:5]:
                    salts = sorted(k.get("salts", []), key=lambda x: -x.get("weight", 0))
                    wsum = sum(x.get("weight", 0) for x in salts) or 1
                    table = " ".join(f"p{x['partition']}:{x['weight']*100/wsum:.0f}%"
                                     for x in salts[:10])
                    more = f" +{len(salts)-10} more" if len(salts) > 10 else ""
                    lines.append(f"  {key_name(k):<14} {k.get('source','?'):<8} share "
                                 f"{k.get('share',0)*100:4.1f}%  {k.get('rate',0):7.0f}/s  "
                                 f"{len(salts):2d} salts  {table}{more}")
            else:
                lines.append("hot keys: coordinator not answering")
            # Surge-to-salting per producer for each designated hot key that has started.
            per_key = {}
            for s in st:
                for h in s.get("hot_keys", []):
                    if h["hot_since_s"] <= t_run:
                        per_key.setdefault((h["key"], h["hot_since_s"]), []).append(
                            (s["producer"], h["detect_s"]))
            for (key, since), items in sorted(per_key.items(), key=lambda x: x[0][1]):
                txt = "  ".join(f"{p.split('-')[-1]}:{'%.2fs' % d if d is not None else '...'}"
                                for p, d in sorted(items))
                lines.append(f"{key} hot since t={since:.0f}s, salted after: {txt}")
                # Once every producer salts a surge key and it has run salted for a while,
                # measure before/after on the brokers by record timestamp, once.
                dets = [d for _, d in items]
                if key not in offsets_before and prev is not None:
                    offsets_before[key] = prev  # read at the previous tick, before the surge
                if (key.startswith(args.surge_prefix) and key not in surges
                        and len(items) >= args.producers and all(d is not None for d in dets)):
                    done = since + max(dets)
                    if t_run >= done + args.settle:
                        t0 = args.start_at_ms
                        start = offsets_before.get(key)
                        ma_b, n_b = window_balance(args.watch, args.bootstrap, args.topic,
                                                   t0 + since * 1000, t0 + done * 1000, start)
                        ma_a, n_a = window_balance(args.watch, args.bootstrap, args.topic,
                                                   t0 + done * 1000,
                                                   t0 + (done + args.settle) * 1000, start)
                        # Measured once, whatever the outcome: a failed read-back (the mock
                        # cluster keeps 5 MB per partition) must not stall the live view.
                        surges[key] = (ma_b, n_b, ma_a, n_a, since, done)
            print("\n".join(lines), flush=True)
            prev, prev_t = offs, now
            if st and len(st) >= args.producers and all(s.get("done") for s in st):
                break
    except KeyboardInterrupt:
        pass
    print()
    for key, (ma_b, n_b, ma_a, n_a, since, done) in surges.items():
        if ma_b is None or ma_a is None:
            continue
        print(f"summary {key}: partition max/avg {ma_b:.2f} while unsalted ({n_b} records), "
              f"{ma_a:.2f} once salted ({n_a} records); salted in every producer "
              f"{done - since:.2f} s after the surge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
