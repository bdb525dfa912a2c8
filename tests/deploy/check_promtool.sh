#!/usr/bin/env bash
# promtool validation of deploy/prometheus: rule syntax, rule unit tests (alerts_test.yml) and
# the scrape config. Exit 77 (ctest skip) when promtool is not installed.
set -euo pipefail
root=${1:?usage: check_promtool.sh REPO_ROOT}
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not found (Debian package prometheus; scripts/deps-deploy.sh installs it)"
  exit 77
fi
cd "$root/deploy/prometheus"
promtool check rules alerts.yml
promtool test rules alerts_test.yml
promtool check config prometheus.yml
