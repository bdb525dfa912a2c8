#!/usr/bin/env python3
"""CI guard for the cost of one plan (issue 14: a surge's plan runs under the topic's lock, and
its cost is part of the time until the list that salts the key is out): instructions per plan
of bench/plan_instructions (window snapshot, detection, tables) on the balance bench's seller45
and zipf1.0 fleets, counted by callgrind, against the committed budget in
bench/plan_budget.json. Instruction counts do not depend on machine load.

  plan_cost_check.py BIN_DIR BUDGET_JSON [--update]

Fails (exit 1) when a figure exceeds its budget by more than `tolerance`; says so, without
failing, when one is more than that below (--update rewrites the file with the measured
figures). Exit 77 (ctest: skipped) without valgrind.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_budget  # noqa: E402

PLANS = 10  # per run: every other plan re-merges the completed epochs (epochs of 1 s)


def measure(driver, name):
    ir, stdout = cost_budget.callgrind([driver, name, str(PLANS)], timeout=900)
    m = re.search(r"plans (\d+) keys_listed (\d+)", stdout)
    if not m or int(m.group(1)) != PLANS:
        sys.exit(f"unexpected driver output: {stdout}")
    # The workloads list their hot keys; a plan that lists nothing is not the plan measured.
    if int(m.group(2)) == 0:
        return ir / PLANS, "no key listed"
    return ir / PLANS, None


def main():
    return cost_budget.main(
        __doc__, "plan_instructions", "instructions_per_plan", "instructions per plan",
        measure,
        "A plan got more expensive: find the change (callgrind_annotate --inclusive=yes on "
        "`valgrind --tool=callgrind --collect-atstart=no build/bin/plan_instructions seller "
        "10`), win it back, or raise the budget on purpose in the same commit saying why.")


if __name__ == "__main__":
    sys.exit(main())
