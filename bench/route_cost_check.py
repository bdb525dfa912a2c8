#!/usr/bin/env python3
"""CI guard for the client's send-path cost (issue 14): instructions per record of routing
(Router::route) and of the whole send path (route + sampler with surge detection, at rate 1
and at the default adaptive rate),
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
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_budget  # noqa: E402

RECORDS = 100000


def measure(driver, mode):
    ir, stdout = cost_budget.callgrind([driver, mode, str(RECORDS)], timeout=600)
    allocs = int(re.search(r"allocations (\d+)", stdout).group(1))
    failure = f"{allocs} heap allocations in {RECORDS} records (must be 0)" if allocs else None
    return ir / RECORDS, failure


def main():
    return cost_budget.main(
        __doc__, "route_instructions", "instructions_per_record", "instructions per record",
        measure,
        "The send path got more expensive: find the change (callgrind_annotate on "
        "`valgrind --tool=callgrind --collect-atstart=no build/bin/route_instructions "
        "sampled_cold 100000`), win it back, or raise the budget on purpose in the same "
        "commit saying why.")


if __name__ == "__main__":
    sys.exit(main())
