#!/usr/bin/env bash
# `systemd-analyze verify` of deploy/systemd/hotkey-coordinator.service, plus its offline
# security exposure score (must stay at or below 2.0, "OK"). verify needs ExecStart to point at
# an existing executable, so a copy of the unit runs the built coordinator (or /bin/true when it
# is not built). Any diagnostic about the unit fails the test, not only a non-zero exit: systemd
# only warns about unknown or misspelled settings. Exit 77 (ctest skip) without systemd-analyze.
set -euo pipefail
root=${1:?usage: check_systemd.sh REPO_ROOT [BIN_DIR]}
bin_dir=${2:-}
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not found (Debian package systemd; scripts/deps-deploy.sh installs it)"
  exit 77
fi
unit=hotkey-coordinator.service
exe=/bin/true
if [ -n "$bin_dir" ] && [ -x "$bin_dir/hotkey-coordinator" ]; then
  exe=$(cd "$bin_dir" && pwd)/hotkey-coordinator
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|/usr/bin/hotkey-coordinator|$exe|" "$root/deploy/systemd/$unit" >"$tmp/$unit"
grep -q "^ExecStart=$exe " "$tmp/$unit" || { echo "FAIL: ExecStart is not /usr/bin/hotkey-coordinator"; exit 1; }

out=$(cd "$tmp" && SYSTEMD_LOG_LEVEL=info systemd-analyze verify "./$unit" 2>&1) || {
  echo "$out"; echo "FAIL: systemd-analyze verify exited non-zero"; exit 1; }
if grep -q "$unit" <<<"$out"; then
  echo "$out"; echo "FAIL: systemd-analyze verify reported problems in $unit"; exit 1
fi
echo "verify: OK (ExecStart=$exe)"

# Offline scoring exists since systemd 250; older versions only score loaded units.
if grep -q -- "--offline" <<<"$(systemd-analyze security --help 2>/dev/null || true)"; then
  score=$(cd "$tmp" && systemd-analyze security --offline=yes "./$unit" 2>&1 | tail -1)
  echo "security: $score"
  (cd "$tmp" && systemd-analyze security --offline=yes --threshold=20 "./$unit" >/dev/null 2>&1) || {
    echo "FAIL: exposure above 2.0; harden the unit again"; exit 1; }
else
  echo "NOTE: this systemd-analyze cannot score units offline; exposure not checked"
fi
