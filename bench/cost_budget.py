"""Shared by the CI cost guards (ingest_cost_check.py, route_cost_check.py): one callgrind run
of a driver, and the comparison of measured figures with a committed JSON budget."""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def callgrind(args, timeout):
    """Runs `args` under callgrind (collection toggled by the driver) and returns the
    instruction total and the driver's stdout; exits on failure."""
    with tempfile.TemporaryDirectory(prefix="hotkey-cost-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--callgrind-out-file=" + out] + args,
            capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        ir = None
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    ir = int(line.split()[1])
        if ir is None:
            sys.exit("no instruction total in the callgrind output")
        return ir, proc.stdout


def check(budget_path, key, unit, measure, update, hint):
    """Compares measure(name) -> (figure, failure or None) with budget[key][name] for every
    name in the budget. Fails when a figure is more than `tolerance` over its budget (or
    measure reports a failure); --update rewrites the budget with the measured figures.
    Returns the exit status."""
    with open(budget_path) as f:
        budget = json.load(f)
    tolerance = budget.get("tolerance", 0.10)
    failed = False
    measured = {}
    for name, want in budget[key].items():
        got, failure = measure(name)
        measured[name] = round(got)
        limit = want * (1 + tolerance)
        verdict = "ok"
        if failure:
            verdict = f"FAIL: {failure}"
            failed = True
        elif got > limit:
            verdict = f"FAIL: more than {tolerance:.0%} over the budget"
            failed = True
        elif got < want * (1 - tolerance):
            verdict = "below budget by more than the tolerance: lower it (--update)"
        print(f"{name}: {got:.0f} {unit}, budget {want} (limit {limit:.0f}): {verdict}")
    if update:
        budget[key] = measured
        with open(budget_path, "w") as f:
            json.dump(budget, f, indent=2)
            f.write("\n")
        print(f"wrote {budget_path}")
        return 0
    if failed:
        print(hint)
        return 1
    return 0


def main(doc, driver_name, key, unit, measure, hint):
    """The command line both guards share: BIN_DIR BUDGET_JSON [--update]; exit 77 (ctest:
    skipped) without valgrind. `measure(driver_path, name)` as for check()."""
    if len(sys.argv) < 3:
        sys.exit(doc)
    bin_dir, budget_path = sys.argv[1], sys.argv[2]
    if shutil.which("valgrind") is None:
        print("valgrind not installed (scripts/deps.sh installs it): skipped")
        return 77
    driver = os.path.join(bin_dir, driver_name)
    return check(budget_path, key, unit, lambda name: measure(driver, name),
                 "--update" in sys.argv[3:], hint)

