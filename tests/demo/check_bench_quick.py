#!/usr/bin/env python3
"""Runs `scripts/bench.sh --quick` on the already-built binaries and checks its results:
this project's strategy must balance the partitions far better than naive hashing, salt only
the hot key, get every producer to salt it, and never lose a record; on the moving hot set it
must stay under MOVING_BOUND."""

import argparse
import json
import os
import subprocess
import sys


# The moving hot set's goal is 1.05 (docs/BENCHMARKS.md). The quick run's window (12-23 s:
# the move of four keys at 12.5% each at 14 s, and 9 s of repaying its transient) measured
# 1.06-1.12 in six runs under load average 7-30 from other engineers' builds (the coordinator
# before the debt accounting: 1.15-1.16); the bound is that plus the margin a loaded 2-core
# CI machine needs (a starved producer keeps a key's records at home longer, and one slow
# detection moved a run from 1.06 to 1.12). It fails gross regressions (a key left unsalted,
# detection seconds late), not the last percent.
MOVING_BOUND = 1.2


def check_moving(scn, hot, check):
    name = scn["name"]
    check(hot["max_avg"] <= MOVING_BOUND,
          f"{name}: hotkey max/avg {hot['max_avg']:.2f} <= {MOVING_BOUND} (goal 1.05)")
    check(hot["detect_never"] == 0 and hot["detect_samples"] > 0,
          f"{name}: every producer salted every key that became hot "
          f"({hot['detect_samples']} samples, p99 {hot['detect_p99_s']})")
    t = hot.get("transient")
    check(t is not None and t["moves"] >= 1,
          f"{name}: the window holds a move (transient {t and round(t['partition_s_per_move'], 2)} "
          f"partition-s per move, steady max/avg {t and round(t['steady_max_avg'], 2)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    env = dict(os.environ, HOTKEY_BUILD_DIR=args.build_dir, HOTKEY_SKIP_BUILD="1")
    subprocess.run([args.bench, "--quick", "--out", args.out], env=env, check=True)
    doc = json.load(open(os.path.join(args.out, "results.json")))

    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # The baselines (static, adaptive) are context for the comparison, not this project's
    # behaviour: on a loaded 2-core machine their producer processes get starved and the
    # per-process detector then sees different rates, so their properties are reported, not
    # enforced (a clean-clone run beside other builds failed on them while every hotkey and
    # naive check passed).
    def note(cond, what):
        print(("ok   " if cond else "warn ") + what)

    for scn in doc["scenarios"]:
        by = {r["strategy"]: r for r in scn["results"]}
        name = scn["name"]
        for r in scn["results"]:
            check(r["records_failed"] == 0, f"{name}/{r['strategy']}: no failed deliveries")
            (check if r["strategy"] in ("naive", "hotkey") else note)(
                r.get("records_undelivered", 0) == 0,
                f"{name}/{r['strategy']}: every record reached the brokers before the count "
                f"({r.get('records_undelivered', 0)} undelivered, "
                f"{r.get('producers_unflushed', 0)} producers' flush timed out)")
            (check if r["strategy"] in ("naive", "hotkey") else note)(
                r["throughput"] >= 0.9 * scn["rate"],
                f"{name}/{r['strategy']}: sent {r['throughput']:.0f} rec/s of {scn['rate']}")
        if name == "moving":
            check_moving(scn, by["hotkey"], check)
            continue
        naive, hot = by["naive"], by["hotkey"]
        check(naive["max_avg"] > 5, f"{name}: naive is skewed (max/avg {naive['max_avg']:.2f})")
        # The goal is 1.05 (docs/BENCHMARKS.md); the bound here leaves room for the sampling
        # noise of a short CI window on a shared machine.
        check(hot["max_avg"] <= 1.6,
              f"{name}: hotkey max/avg {hot['max_avg']:.2f} <= 1.6")
        check(hot["max_avg"] * 4 < naive["max_avg"],
              f"{name}: hotkey max/avg {hot['max_avg']:.2f} is 4x better than naive "
              f"{naive['max_avg']:.2f}")
        check(hot["keys_salted"] == 1,
              f"{name}: hotkey salted exactly the hot key ({hot['salted_keys_sample']})")
        check(hot["detect_never"] == 0 and hot["detect_samples"] == scn["producers"],
              f"{name}: every one of {scn['producers']} producers salted the hot key "
              f"(p99 {hot['detect_p99_s']})")
        if scn["producers"] >= 16 and "adaptive" in by:
            # The premise of the fleet scenario: no single producer sees the key as hot.
            note(by["adaptive"]["keys_salted"] == 0,
                  f"{name}: per-process detection salts nothing with the key spread over "
                  f"{scn['producers']} producers")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
