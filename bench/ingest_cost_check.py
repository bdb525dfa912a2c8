#!/usr/bin/env python3
"""CI guard for the coordinator's ingest cost (issue 18): instructions per merged entry of the
in-process ingest path (decode, validate, merge), counted by callgrind, against the committed
budget in bench/ingest_budget.json. Instruction counts do not depend on machine load, so the
check holds on a busy CI runner where CPU-second figures do not.

  ingest_cost_check.py BIN_DIR BUDGET_JSON [--update]

Fails (exit 1) when a figure exceeds its budget by more than `tolerance` (10%); says so, without
failing, when one is more than 10% below (lower the budget to keep the guard tight: --update
rewrites the file with the measured figures). Exit 77 (ctest: skipped) without valgrind.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPORTS = 400  # per run: 400 reports x 256 entries, well past the first flushes and epochs


def measure(driver, encoding, entries):
    with tempfile.TemporaryDirectory(prefix="hotkey-ingest-cost-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--callgrind-out-file=" + out, driver, encoding, str(entries), str(REPORTS)],
            capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            sys.exit(f"{driver} {encoding} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        merged = int(re.search(r"merged_entries (\d+)", proc.stdout).group(1))
        ir = None
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    ir = int(line.split()[1])
        if ir is None or merged != entries * REPORTS:
            sys.exit(f"no instruction total or unexpected merged count ({merged})")
        return ir / merged


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bin_dir, budget_path = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv[3:]
    if shutil.which("valgrind") is None:
        print("valgrind not installed (scripts/deps.sh installs it): skipped")
        return 77
    driver = os.path.join(bin_dir, "ingest_instructions")
    with open(budget_path) as f:
        budget = json.load(f)
    tolerance = budget.get("tolerance", 0.10)
    failed = False
    measured = {}
    for name, want in budget["instructions_per_entry"].items():
        encoding, entries = name.rsplit("_", 1)
        got = measure(driver, encoding, int(entries))
        measured[name] = round(got)
        limit = want * (1 + tolerance)
        verdict = "ok"
        if got > limit:
            verdict = f"FAIL: more than {tolerance:.0%} over the budget"
            failed = True
        elif got < want * (1 - tolerance):
            verdict = "below budget by more than the tolerance: lower it (--update)"
        print(f"{name}: {got:.0f} instructions per merged entry, budget {want} "
              f"(limit {limit:.0f}): {verdict}")
    if update:
        budget["instructions_per_entry"] = measured
        with open(budget_path, "w") as f:
            json.dump(budget, f, indent=2)
            f.write("\n")
        print(f"wrote {budget_path}")
        return 0
    if failed:
        print("The ingest path got more expensive: find the change (callgrind_annotate on "
              "`valgrind --tool=callgrind --collect-atstart=no build/bin/ingest_instructions "
              "json 256 400`), win it back, or raise the budget on purpose in the same commit "
              "saying why.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
