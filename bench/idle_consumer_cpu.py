#!/usr/bin/env python3
"""CPU of idle librdkafka consumers, per handle (docs/CLIENT.md "Kafka transport").

    idle_consumer_cpu.py BOOTSTRAP TOPIC [HANDLES] [SECONDS]

Makes HANDLES consumers (default 20) configured as the client's lists consumer (group.id never
joined, assign() of TOPIC's partition 0, fetch.wait.max.ms=500), lets them settle for 5 s, then
prints the process's CPU (getrusage) over SECONDS (default 30) divided by the handle count.
Run it with each Python whose confluent_kafka links the librdkafka to compare: Debian's
/usr/bin/python3 (python3-confluent-kafka, the system librdkafka) and the build's
build/plugin-pypi-venv/bin/python (the PyPI wheel's own librdkafka). TOPIC must exist.
"""
import resource
import sys
import time

import confluent_kafka as ck


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bootstrap, topic = sys.argv[1], sys.argv[2]
    handles = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    consumers = []
    for _ in range(handles):
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "hotkey.clients",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 500})
        c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        consumers.append(c)
    time.sleep(5)
    c0, t0 = cpu_s(), time.monotonic()
    time.sleep(seconds)
    per_handle_ms = (cpu_s() - c0) / (time.monotonic() - t0) * 1000 / handles
    print("librdkafka %s: %d idle consumers, %.3f ms CPU/s per handle"
          % (ck.libversion()[0], handles, per_handle_ms))
    for c in consumers:
        c.close()


if __name__ == "__main__":
    main()
