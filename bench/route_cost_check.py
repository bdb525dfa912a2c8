#!/usr/bin/env python3
"""CI guard for the client's send-path cost (issue 14): instructions per record of routing
(Router::route) and of the whole send path (route + sampler at rate 1 with surge detection),
counted by callgrind over bench/route_instructions, against the committed budget in
bench/route_budget.json; and zero heap allocations per record on every path. Instruction
counts do not depend on machine load, so the check holds on a busy CI runner where timings do
not.

  route_cost_check.py BIN_DIR BUDGET_JSON [--update]

Fails (exit 1) when a figure exceeds its budget by more than `tolerance` (10%) or a path
allocates; says so, without failing, when one is more than 10% below (lower the budget to keep
the guard tight: --update rewrites the file with the measured figures). Exit 77 (ctest:
skipped) without valgrind.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

RECORDS = 100000


def measure(driver, mode):
    with tempfile.TemporaryDirectory(prefix="hotkey-route-cost-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--callgrind-out-file=" + out, driver, mode, str(RECORDS)],
            capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            sys.exit(f"{driver} {mode} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        allocs = int(re.search(r"allocations (\d+)", proc.stdout).group(1))
        ir = None
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    ir = int(line.split()[1])
        if ir is None:
            sys.exit("no instruction total in the callgrind output")
        return ir / RECORDS, allocs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bin_dir, budget_path = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv[3:]
    if shutil.which("valgrind") is None:
        print("valgrind not installed (scripts/deps.sh installs it): skipped")
        return 77
    driver = os.path.join(bin_dir, "route_instructions")
    with open(budget_path) as f:
        budget = json.load(f)
    tolerance = budget.get("tolerance", 0.10)
    failed = False
    measured = {}
    for mode, want in budget["instructions_per_record"].items():
        got, allocs = measure(driver, mode)
        measured[mode] = round(got)
        limit = want * (1 + tolerance)
        verdict = "ok"
        if allocs != 0:
            verdict = f"FAIL: {allocs} heap allocations in {RECORDS} records (must be 0)"
            failed = True
        elif got > limit:
            verdict = f"FAIL: more than {tolerance:.0%} over the budget"
            failed = True
        elif got < want * (1 - tolerance):
            verdict = "below budget by more than the tolerance: lower it (--update)"
        print(f"{mode}: {got:.0f} instructions per record, budget {want} (limit {limit:.0f}), "
              f"{allocs} allocations: {verdict}")
    if update:
        budget["instructions_per_record"] = measured
        with open(budget_path, "w") as f:
            json.dump(budget, f, indent=2)
            f.write("\n")
        print(f"wrote {budget_path}")
        return 0
    if failed:
        print("The send path got more expensive: find the change (callgrind_annotate on "
              "`valgrind --tool=callgrind --collect-atstart=no build/bin/route_instructions "
              "sampled_cold 100000`), win it back, or raise the budget on purpose in the same "
              "commit saying why.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
