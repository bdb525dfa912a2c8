#!/usr/bin/env bash
# Builds one libFuzzer target with clang (-fsanitize=fuzzer,address,undefined) in build-fuzz/ and
# runs it on a scratch copy of its committed seed corpus for SECONDS.
#
#   scripts/fuzz.sh NAME [SECONDS]     NAME: report_json report_binary list_json space_saving
#                                      store_records config_json import_json
#
# New inputs go to build-fuzz/corpus/NAME (not to the repo); a crash leaves crash-* files in
# build-fuzz/. Minimize a finding, add it to fuzz/corpus/NAME/ as regress-<what>, fix the decoder
# and the replay test keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: scripts/fuzz.sh NAME [SECONDS]}
SECONDS_TO_RUN=${2:-60}
BUILD=${HOTKEY_FUZZ_BUILD:-build-fuzz}
CXX_BIN=$(command -v clang++-14 || command -v clang++)
C_BIN=$(command -v clang-14 || command -v clang)

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOTKEY_FUZZ=ON \
  -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCMAKE_C_COMPILER="$C_BIN" \
  -DHOTKEY_BUILD_TESTS=OFF -DHOTKEY_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"${HOTKEY_JOBS:-2}" --target "${NAME}_fuzzer"

mkdir -p "$BUILD/corpus/$NAME"
cd "$BUILD"
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
  "bin/${NAME}_fuzzer" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 "corpus/$NAME" "../fuzz/corpus/$NAME"
