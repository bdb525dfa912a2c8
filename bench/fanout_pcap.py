#!/usr/bin/env python3
"""When the broker sends a new list to the fan-out bench's subscribers, read off the wire.

hotkey-fanout-bench measures publish -> subscriber poll, which on one machine includes the
subscriber processes' own CPU. This splits off the broker's part: for each produce request of
the publisher (a packet to the broker port larger than --produce-bytes), the times at which the
broker wrote the fetch responses carrying the record (packets from the broker port larger than
--response-bytes) until the next produce request.

  build/bin/hotkey-fanout-bench --subscribers 1000 --processes 4 --rounds 30   # prints the port
  tcpdump -i lo -n -tt -s 96 -B 16384 -w /tmp/fan.pcap "tcp port PORT and greater 400"  # a few s
  tcpdump -r /tmp/fan.pcap -n -tt | python3 bench/fanout_pcap.py PORT

Prints one line per round: responses seen, first / p50 / p99 / last after the produce request.
A fetch response is written as two segments (the header, then the records by sendfile); only
the larger is counted.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port")
    ap.add_argument("--produce-bytes", type=int, default=600)
    ap.add_argument("--response-bytes", type=int, default=400)
    a = ap.parse_args()
    rounds = []  # [produce time, [response times]]
    for line in sys.stdin:
        f = line.split()
        if len(f) < 7 or f[-2] != "length" or f[1] != "IP":
            continue
        t, src, dst, length = float(f[0]), f[2], f[4].rstrip(":"), int(f[-1])
        if dst.endswith("." + a.port) and length > a.produce_bytes:
            rounds.append([t, []])
        elif src.endswith("." + a.port) and length > a.response_bytes and rounds:
            rounds[-1][1].append(t)
    for t0, sent in rounds:
        d = sorted((x - t0) * 1000 for x in sent)
        if not d:
            continue
        n = len(d)
        print(f"{n} responses: first {d[0]:.1f} p50 {d[n // 2]:.1f} "
              f"p99 {d[max(0, int(n * 0.99) - 1)]:.1f} last {d[-1]:.1f} ms")


if __name__ == "__main__":
    main()
