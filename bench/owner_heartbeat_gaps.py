#!/usr/bin/env python3
"""Gaps between ownership heartbeats as a producer's lists consumer receives them (issue 37).

The owner of a lists partition writes a heartbeat record (key "/owner") every interval; a
client judges the owner gone when none arrived for hotkey.list.stale.ms by its own clock
(docs/CLIENT.md, "Local tables"). The bound must stay above the largest gap a live owner's
heartbeats show at the reader, or a healthy topic turns stale. This measures those gaps on a
real Apache Kafka (scripts/kafka.sh, one node on loopback): a writer with the coordinator's
producer settings (acks=all, idempotent, linger.ms 5) writes one heartbeat every --interval-ms,
a reader with the client's lists consumer settings (fetch.wait.max.ms 500, assigned, no group)
timestamps each arrival with its monotonic clock. Writer and reader are separate processes, as
a coordinator and a producer are.

  bench/owner_heartbeat_gaps.py [--seconds 600] [--interval-ms 1000] [--out gaps.json]

Prints the gap distribution (ms) and, with --out, writes every gap. Needs python3-confluent-kafka
and the Kafka jars (scripts/kafka.sh fetch).
"""

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPIC = "__hotkey_lists"


def writer(bootstrap, interval_ms, seconds):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    deadline = time.monotonic() + seconds
    n = 0
    next_at = time.monotonic()
    while time.monotonic() < deadline:
        beat = {"v": 1, "owner": "http://bench:8470", "partition": 0, "epoch": 1,
                "at_ms": int(time.time() * 1000), "interval_ms": interval_ms}
        p.produce(TOPIC, key="/owner", value=json.dumps(beat), partition=0,
                  headers=[("hotkey.member", b"http://bench:8470")])
        p.poll(0)
        n += 1
        next_at += interval_ms / 1000.0
        time.sleep(max(0.0, next_at - time.monotonic()))
    p.flush(10)


def reader(bootstrap, seconds, queue):
    from confluent_kafka import Consumer, TopicPartition, OFFSET_END

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hotkey.clients",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 500,
                  "enable.partition.eof": False})
    c.assign([TopicPartition(TOPIC, 0, OFFSET_END)])
    arrivals = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = c.poll(0.05)
        if m is None or m.error():
            continue
        if m.key() == b"/owner":
            arrivals.append(time.monotonic())
    c.close()
    queue.put(arrivals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--out")
    args = ap.parse_args()
    kafka = os.path.join(ROOT, "scripts", "kafka.sh")
    with tempfile.TemporaryDirectory(prefix="hotkey-hb-") as d:
        bootstrap = subprocess.run([kafka, "start", d, "--owner", str(os.getpid())], check=True,
                                   capture_output=True, text=True).stdout.strip().splitlines()[-1]
        try:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(TOPIC, 1, 1, config={"cleanup.policy": "compact"})])[
                TOPIC].result(30)
            queue = multiprocessing.Queue()
            r = multiprocessing.Process(target=reader, args=(bootstrap, args.seconds + 3, queue))
            r.start()
            time.sleep(3)  # the reader is assigned before the first beat
            w = multiprocessing.Process(target=writer,
                                        args=(bootstrap, args.interval_ms, args.seconds))
            w.start()
            arrivals = queue.get()
            w.join()
            r.join()
        finally:
            subprocess.run([kafka, "stop", d], check=False, capture_output=True)
    gaps = sorted((b - a) * 1000 for a, b in zip(arrivals, arrivals[1:]))
    if not gaps:
        print("no heartbeats received", file=sys.stderr)
        return 1

    def q(p):
        return gaps[min(len(gaps) - 1, int(p * len(gaps)))]

    load = os.getloadavg()
    print(f"{len(arrivals)} heartbeats every {args.interval_ms} ms over {args.seconds:.0f} s "
          f"(load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}): gap ms "
          f"min {gaps[0]:.0f} p50 {q(0.5):.0f} p99 {q(0.99):.0f} p99.9 {q(0.999):.0f} "
          f"max {gaps[-1]:.0f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"interval_ms": args.interval_ms, "gaps_ms": gaps}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
