#!/usr/bin/env python3
"""Runs `scripts/bench.sh --quick` on the already-built binaries and checks its results:
this project's strategy must balance the partitions far better than naive hashing, salt only
the hot key, get every producer to salt it, and never lose a record."""

import argparse
import json
import os
import subprocess
import sys


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
                r["throughput"] >= 0.9 * scn["rate"],
                f"{name}/{r['strategy']}: sent {r['throughput']:.0f} rec/s of {scn['rate']}")
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
