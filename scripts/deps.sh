#!/usr/bin/env bash
# Installs the Debian packages this project builds, tests and demos with.
# Idempotent: when everything is present it only checks and exits (no apt-get update).
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config git ca-certificates
  librdkafka-dev kcat
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  nlohmann-json3-dev
  librocksdb-dev
  prometheus-cpp-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  curl python3 python3-venv
  python3-confluent-kafka
  valgrind
  openjdk-17-jdk-headless maven unzip
)
# Extra groups, opted into with flags.
BROWSER_PKGS=(chromium nodejs npm)

want=("${PKGS[@]}")
for arg in "$@"; do
  case "$arg" in
    --browser) want+=("${BROWSER_PKGS[@]}") ;;
    -h|--help) echo "usage: scripts/deps.sh [--browser]"; exit 0 ;;
    *) echo "deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  # Machines that ship Node.js from another source (whose nodejs package bundles npm and
  # conflicts with Debian's npm) already have what the browser tests need.
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps.sh: installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
