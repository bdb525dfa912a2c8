#!/usr/bin/env bash
# Installs the validators the deploy/ tests use: promtool (Debian package prometheus), PyYAML
# (python3-yaml), systemd-analyze (systemd) and ldb (rocksdb-tools, for the backup test).
# Idempotent: when everything is present it only checks and exits. The tests skip, saying
# why, when a tool is missing, so this script is optional for a build but needed for full
# deploy/ coverage.
set -euo pipefail

PKGS=(prometheus python3-yaml systemd rocksdb-tools)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps-deploy.sh: installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps prometheus' web UI assets and exporters out; promtool is in
# the main package. policy-rc.d is not touched: in a container without systemd the package's
# service simply does not start, which is what a validator-only install wants.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
