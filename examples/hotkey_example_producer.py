#!/usr/bin/python3
"""A Python producer adopting hot-key routing by configuration alone: confluent-kafka (Debian:
python3-confluent-kafka) loads the librdkafka plugin libhotkey-rdkafka.so, which samples and
reports the keys sent, follows the coordinator's hot-key list and spreads the listed keys over
their verified salts. The produce code is the ordinary confluent-kafka code.

  examples/hotkey_example_producer.py --bootstrap HOST:PORT [--topic orders]
      [--coordinator http://127.0.0.1:8470] [--plugin libhotkey-rdkafka] [--records 100000]

--plugin takes a name the loader finds once the plugin is installed (libhotkey-rdkafka) or a
path, e.g. build/lib/libhotkey-rdkafka.so in a build tree. See docs/CLIENT.md, "Adopting
without code changes"."""
import argparse
import random
import sys

from confluent_kafka import Producer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", default="orders")
    ap.add_argument("--coordinator", default="http://127.0.0.1:8470")
    ap.add_argument("--plugin", default="libhotkey-rdkafka")
    ap.add_argument("--records", type=int, default=100000)
    args = ap.parse_args()

    producer = Producer({
        "bootstrap.servers": args.bootstrap,
        # The two lines that adopt hot-key routing; any hotkey.* property of docs/CLIENT.md
        # may follow (a bad value raises KafkaException here, naming the property).
        "plugin.library.paths": args.plugin,
        "hotkey.coordinator.url": args.coordinator,
        "partitioner": "murmur2_random",  # the family the plugin routes cold keys with
    })
    failed = 0

    def on_delivery(err, _msg):
        nonlocal failed
        if err is not None:
            failed += 1

    # A skewed workload: one seller carries a third of the records.
    rng = random.Random(7)
    for i in range(args.records):
        key = "seller-42" if i % 3 == 0 else "seller-%d" % rng.randrange(10000)
        while True:
            try:
                producer.produce(args.topic, key=key, value=b"order-%d" % i,
                                 on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(30)
    print("sent %d records, %d failed, %d undelivered" % (args.records, failed, left))
    return 0 if failed == 0 and left == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
