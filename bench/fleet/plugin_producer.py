#!/usr/bin/python3
"""One Python producer of the mixed fleet (bench/fleet/fleet_bench.py): Debian's
python3-confluent-kafka, with the hotkey librdkafka plugin loaded by configuration alone
(--plugin) or without it (the naive fleet), sending hotkey-loadgen's workload on its schedule:
--rate records/s for --duration s from --start-at-ms, key "hot-0" with probability --hot-share,
else "user-<rank>" uniform over --keys. Prints a JSON summary (records sent, delivered, failed,
process CPU seconds); exit 3 when records failed."""
import argparse
import json
import random
import sys
import time

import confluent_kafka


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--plugin", help="path of libhotkey-rdkafka.so (none: naive)")
    ap.add_argument("--coordinator", help="hotkey.coordinator.url")
    ap.add_argument("--producer-id", required=True)
    ap.add_argument("--rate", type=float, default=500)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--start-at-ms", type=int, default=0)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--hot-share", type=float, default=0.4)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    # murmur2, as the other producers of the fleet (the Java client's and loadgen's family).
    conf = {"bootstrap.servers": args.bootstrap, "partitioner": "murmur2_random",
            "linger.ms": str(args.linger_ms)}
    if args.plugin:
        conf.update({"plugin.library.paths": args.plugin,
                     "hotkey.coordinator.url": args.coordinator,
                     "hotkey.producer.id": args.producer_id})
    producer = confluent_kafka.Producer(conf)
    rng = random.Random(args.seed)
    value = b"x" * args.value_bytes
    counts = {"delivered": 0, "failed": 0}

    def on_delivery(err, _msg):
        counts["failed" if err is not None else "delivered"] += 1

    start = (args.start_at_ms / 1000.0) if args.start_at_ms else time.time() + 1
    records = int(args.rate * args.duration)
    sent = 0
    for i in range(records):
        due = start + i / args.rate
        wait = due - time.time()
        if wait > 0:
            producer.poll(wait)
        if rng.random() < args.hot_share:
            key = "hot-0"
        else:
            key = "user-%d" % min(int(rng.random() * args.keys), args.keys - 1)
        while True:
            try:
                producer.produce(args.topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        sent += 1
    left = producer.flush(60)
    t = time.process_time()
    out = json.dumps({"mode": "plugin" if args.plugin else "naive", "topic": args.topic,
                      "records_sent": sent, "records_delivered": counts["delivered"],
                      "records_failed": counts["failed"] + left, "cpu_s": round(t, 3)})
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(out + "\n")
    else:
        print(out)
    return 3 if counts["failed"] or left else 0


if __name__ == "__main__":
    sys.exit(main())
