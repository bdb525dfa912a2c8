#!/usr/bin/env python3
"""Live view for scripts/demo.sh: broker-side partition rates, max/avg before and after
salting, time from surge to salting in every producer, and the coordinator's hot keys with
their salt tables. Reads only: the brokers (hotkey-watch), the coordinator's HTTP API and the
producers' status files. Ends when every producer is done, or on Ctrl-C."""

import argparse
import glob
import json
import math
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


def noise_floor(records, partitions):
    """About the max/avg that `records` spread evenly at random over `partitions` read (the
    sampling floor: a balanced topic cannot read lower), so a figure is judged against it."""
    if records <= 0 or partitions <= 1:
        return None
    per = records / partitions
    # The expected largest of `partitions` normal counts, mean `per`, deviation sqrt(per).
    a = math.sqrt(2 * math.log(partitions))
    z = a - (math.log(math.log(partitions)) + math.log(4 * math.pi)) / (2 * a)
    return 1 + max(z, 0.0) / math.sqrt(per)


def balance_text(ma, n, partitions):
    if ma is None:
        return f"not read back ({n})"
    if not n:
        return "no records in that window"
    floor = noise_floor(n, partitions)
    return f"max/avg {ma:.2f} over {n} records (an even random spread reads ~{floor:.2f})"


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
    snapshots = []  # (wall ms, end offsets), every tick: a surge's read-back starts before it
    sent_hist = []  # (schedule s, records the producers had sent by then), every tick
    t_stored = 0.0
    sent_prev = None
    owner_seen, gap = None, None  # cluster: the owner last answering; (start s, end s or None)
    gaps = []
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
            if offs is not None:
                snapshots.append((now * 1000, offs))
            sent_total = sum(s.get("sent", 0) for s in st)
            if offs is not None:
                sent_hist.append((t_run, sent_total))
                stored = sum(offs) - sum(snapshots[0][1])
                # The schedule time up to which the brokers hold everything the producers sent.
                held = [t for t, n in sent_hist if n <= stored]
                t_stored = held[-1] if held else 0.0
            if offs is not None and prev is not None:
                delta = [a - b for a, b in zip(offs, prev)]
                secs = now - prev_t
                idle = sum(1 for d in delta if d <= 0) / len(delta)
                mx = max(max(delta), 1)
                bar = "".join(BARS[min(8, max(0, d * 8 // mx))] for d in delta)
                sent_rate = ((sent_total - sent_prev) / secs) if sent_prev is not None else 0
                lines.append(f"producers {sent_rate:6.0f} rec/s sent, brokers {sum(delta)/secs:6.0f} "
                             f"rec/s stored (holding what was sent up to "
                             f"{max(0.0, t_run - t_stored):4.1f} s ago)   |{bar}|")
                # The balance of what the producers sent in the last 6 s the brokers hold in
                # full, read back by record timestamp: exact whatever the delivery lag, and
                # judged against the sampling floor of that many records.
                if t_stored >= 6:
                    t0 = args.start_at_ms
                    a, b = t0 + (t_stored - 6) * 1000, t0 + t_stored * 1000
                    before = [o for at, o in snapshots if at <= a - 1000]
                    ma, n = window_balance(args.watch, args.bootstrap, args.topic, a, b,
                                           before[-1] if before else None)
                    lines.append(f"  records sent at t={t_stored - 6:.0f}-{t_stored:.0f}s: "
                                 f"{balance_text(ma, n, len(delta))}   idle {idle*100:3.0f}%")
            sent_prev = sent_total
            stale = [s for s in st if s.get("stale")]
            if stale:
                local = sum(s.get("local_salted_records", 0) for s in st)
                lines.append(f"{len(stale)}/{len(st)} producers see a stale list: new surges are "
                             f"salted with local tables ({local} records so far)")
            for key, surge in surges.items():
                lines.append(surge_text(key, surge, offs, gaps + ([(gap, None)] if gap else []),
                                        args.settle))
            if args.cluster:
                alive = [(u, get_json(f"{u}/v1/cluster")) for u in urls]
                alive = [(u, c) for u, c in alive if c is not None]
                owner = next((c.get("owners", {}).get(args.topic) for _, c in alive
                              if c.get("owners", {}).get(args.topic)), None)
                answering = {u for u, _ in alive}
                if owner in answering:
                    if gap is not None:
                        gaps.append((gap, t_run))
                        gap = None
                    owner_seen = owner
                elif owner_seen is not None and gap is None:
                    gap = t_run  # the owner stopped answering: an ownership gap begins
                lines.append(f"cluster: {len(alive)}/{len(urls)} coordinators answering; "
                             f"{args.topic} owned by {owner or '(nobody yet)'}"
                             + (f" (not answering since t={gap:.0f}s: ownership gap)"
                                if gap is not None else ""))
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
                            (s["producer"], h["detect_s"], h.get("local", False)))
            for (key, since), items in sorted(per_key.items(), key=lambda x: x[0][1]):
                txt = "  ".join(f"{p.split('-')[-1]}:{'%.2fs' % d if d is not None else '...'}"
                                f"{' local' if loc else ''}"
                                for p, d, loc in sorted(items))
                lines.append(f"{key} hot since t={since:.0f}s, salted after: {txt}")
                # Once every producer salts a surge key and it has run salted for a while,
                # measure before/after on the brokers by record timestamp, once.
                dets = [d for _, d, _ in items]
                if (key.startswith(args.surge_prefix) and key not in surges
                        and len(items) >= args.producers and all(d is not None for d in dets)):
                    done = since + max(dets)
                    # Read back once the brokers hold what was sent until then.
                    if t_stored >= done + args.settle:
                        t0 = args.start_at_ms
                        # Read back from offsets taken before the surge began (a second early:
                        # records are stamped when sent, and stored a little later).
                        before = [o for at, o in snapshots if at <= t0 + since * 1000 - 1000]
                        start = before[-1] if before else None
                        ma_b, n_b = (window_balance(args.watch, args.bootstrap, args.topic,
                                                    t0 + since * 1000, t0 + done * 1000, start)
                                     if done - since >= 0.5 else (None, 0))
                        ma_a, n_a = window_balance(args.watch, args.bootstrap, args.topic,
                                                   t0 + done * 1000,
                                                   t0 + (done + args.settle) * 1000, start)
                        local = all(loc for _, _, loc in items)
                        # Measured once, whatever the outcome: a failed read-back (the mock
                        # cluster keeps 5 MB per partition) must not stall the live view.
                        surges[key] = (ma_b, n_b, ma_a, n_a, since, done, local)
            print("\n".join(lines), flush=True)
            prev, prev_t = offs, now
            if st and len(st) >= args.producers and all(s.get("done") for s in st):
                break
    except KeyboardInterrupt:
        pass
    print()
    if gap is not None:
        gaps.append((gap, None))
    for key, surge in surges.items():
        print("summary " + surge_text(key, surge, prev, gaps, args.settle))
    return 0


def surge_text(key, surge, offs, gaps, settle):
    """One line on a surge: when it came (inside an ownership gap or not), how soon every
    producer salted it and how (the coordinator's list or local tables), and the brokers'
    balance while unsalted and once salted, with the sampling floor to judge it by."""
    ma_b, n_b, ma_a, n_a, since, done, local = surge
    partitions = len(offs) if offs else 1
    where = ""
    for start, end in gaps:
        if start <= since and (end is None or since < end):
            where = (f" inside the ownership gap (owner gone at t={start:.0f}s, "
                     + (f"a new owner answering from t={end:.0f}s)" if end else "no owner yet)"))
    how = "by local tables (the list was stale)" if local else "by the coordinator's list"
    text = (f"{key}: surge at t={since:.0f}s{where}; salted in every producer {how} "
            f"{done - since:.2f} s after it began")
    if done - since >= 0.5:
        text += f"; until then {balance_text(ma_b, n_b, partitions)}"
    text += f"; over the next {settle:.0f} s {balance_text(ma_a, n_a, partitions)}"
    return text


if __name__ == "__main__":
    sys.exit(main())
