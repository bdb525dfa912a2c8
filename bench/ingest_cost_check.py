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
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_budget  # noqa: E402

REPORTS = 400  # per run: 400 reports x 256 entries, well past the first flushes and epochs


def measure(driver, name):
    encoding, entries = name.rsplit("_", 1)
    ir, stdout = cost_budget.callgrind([driver, encoding, entries, str(REPORTS)], timeout=900)
    merged = int(re.search(r"merged_entries (\d+)", stdout).group(1))
    if merged != int(entries) * REPORTS:
        sys.exit(f"unexpected merged count ({merged})")
    return ir / merged, None


def main():
    return cost_budget.main(
        __doc__, "ingest_instructions", "instructions_per_entry", "instructions per merged entry",
        measure,
        "The ingest path got more expensive: find the change (callgrind_annotate on "
        "`valgrind --tool=callgrind --collect-atstart=no build/bin/ingest_instructions "
        "json 256 400`), win it back, or raise the budget on purpose in the same commit "
        "saying why.")


if __name__ == "__main__":
    sys.exit(main())
