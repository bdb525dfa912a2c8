#!/usr/bin/env python3
"""What a 16 s or 60 s Zipf run of the balance bench can show (issue 16).

The bench scores the brokers' per-partition counts over its steady window (9 s in 16 s runs,
53 s in 60 s runs). Two noises stand between a planner and that figure:
  1. the planner's view of the cold keys' load per partition is counted over the seconds of
     traffic it has seen (T), Poisson: water-filling levels that estimate, so the true load keeps
     its error;
  2. the brokers count the window's records, Poisson again (the bench's "noise floor").
This simulates an idealised planner on the bench's workload (100,000 keys "user-<rank>", Kafka's
murmur2 over 32 partitions, 16,000 records/s): the top N keys are salted and their traffic is
water-filled exactly (divisible, no sketch error) onto a cold load estimated from T seconds of
counts (T = inf: known exactly). It prints the expected max/avg (what the planner controls), the
max/avg the bench would count, and how often that is <= 1.04.

    python3 bench/balance/zipf_floor.py            # 300 trials per row, fixed seed
"""
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from balance_bench import murmur2  # noqa: E402

PARTITIONS, KEYS, RATE = 32, 100000, 16000
SALTED = 40  # the top keys salted: more than the bench's planner salts (8-14), as an ideal one might
TRIALS = 300


def water_fill(estimate, amount):
    lo, hi = min(estimate), max(estimate) + amount
    for _ in range(60):
        level = (lo + hi) / 2
        if sum(max(0.0, level - c) for c in estimate) > amount:
            hi = level
        else:
            lo = level
    return [max(0.0, lo - c) for c in estimate]


def mean(v):
    return sum(v) / len(v)


def share_ok(v):
    return sum(x <= 1.04 for x in v) / len(v)


def main():
    rng = random.Random(1)
    homes = [(murmur2(f"user-{r}".encode()) & 0x7FFFFFFF) % PARTITIONS for r in range(KEYS)]
    print("| Zipf | keys salted | planner's T | expected max/avg | counted, 9 s window | "
          "P(counted <= 1.04) | counted, 53 s window | P(<= 1.04) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for z in (0.8, 1.0):
        weights = [(r + 1) ** -z for r in range(KEYS)]
        total = sum(weights)
        share = [w / total for w in weights]
        cold = [0.0] * PARTITIONS
        for r in range(SALTED, KEYS):
            cold[homes[r]] += share[r]
        hot = sum(share[:SALTED])
        for seconds in (6, 10, 30, None):
            expected, counted9, counted53 = [], [], []
            for _ in range(TRIALS):
                if seconds is None:
                    est = cold
                else:
                    n = RATE * seconds
                    est = [c + rng.gauss(0, math.sqrt(c / n)) for c in cold]
                load = [c + a for c, a in zip(cold, water_fill(est, hot))]
                expected.append(max(load) / (sum(load) / PARTITIONS))
                for window, out in ((9, counted9), (53, counted53)):
                    m = RATE * window
                    obs = [x * m + rng.gauss(0, math.sqrt(x * m)) for x in load]
                    out.append(max(obs) / (sum(obs) / PARTITIONS))
            t = "exact" if seconds is None else f"{seconds} s"
            print(f"| {z} | {SALTED} | {t} | {mean(expected):.3f} | {mean(counted9):.3f} | "
                  f"{share_ok(counted9):.2f} | {mean(counted53):.3f} | {share_ok(counted53):.2f} |")


if __name__ == "__main__":
    main()
