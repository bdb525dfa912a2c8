#!/usr/bin/python3
"""One producer process of the plugin's Python tests: a confluent-kafka Producer (Debian's
python3-confluent-kafka, or the PyPI wheel in a venv) with the hotkey librdkafka plugin loaded by
configuration alone, sending the skewed workload of tests/plugin/plugin_test.cc (the same
sequence the C++ wrapper sends there).

Record i carries key "hot-user" when i is even, else "user-<(i * 7919) % 500>". Records go out in
batches of 200 with a 20 ms pause between batches. Exit status 0 when every record was
delivered, 3 when the Producer could not be created (the reason on stderr)."""
import argparse
import sys
import time

import confluent_kafka


def key_of(i):
    return "hot-user" if i % 2 == 0 else "user-%d" % ((i * 7919) % 500)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--plugin", required=True, help="path of libhotkey-rdkafka.so")
    ap.add_argument("--url", required=True, help="hotkey.coordinator.url")
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--producer-id", required=True)
    ap.add_argument("--startup-wait-ms", type=int, default=0)
    args = ap.parse_args()

    conf = {
        "bootstrap.servers": args.bootstrap,
        "plugin.library.paths": args.plugin,
        "hotkey.coordinator.url": args.url,
        "hotkey.producer.id": args.producer_id,
        "hotkey.report.interval.ms": "200",
        "linger.ms": "5",
    }
    if args.startup_wait_ms > 0:
        conf["hotkey.topics"] = args.topic
        conf["hotkey.startup.wait.ms"] = str(args.startup_wait_ms)
    binding = confluent_kafka.version()  # a tuple up to 2.x, a string in recent wheels
    print("skew_producer: confluent-kafka %s, librdkafka %s" %
          (binding if isinstance(binding, str) else binding[0], confluent_kafka.libversion()[0]),
          file=sys.stderr)
    try:
        producer = confluent_kafka.Producer(conf)
    except confluent_kafka.KafkaException as e:
        print("skew_producer: %s" % e.args[0].str(), file=sys.stderr)
        return 3
    failed = [0]

    def on_delivery(err, _msg):
        if err is not None:
            failed[0] += 1

    for i in range(args.records):
        while True:
            try:
                producer.produce(args.topic, key=key_of(i), value=b"x", on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 200 == 199:
            producer.poll(0)
            time.sleep(0.02)
    left = producer.flush(60)
    if left or failed[0]:
        print("skew_producer: %d undelivered, %d failed" % (left, failed[0]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
