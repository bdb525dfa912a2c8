#!/usr/bin/env bash
# Runs deploy/docker/Dockerfile's steps on this machine, without a container engine, and checks
# what an image build cannot show until it runs: that the runtime stage's package list
# (RUNTIME_PACKAGES, read from the Dockerfile) provides every shared library the staged binaries
# load, directly or through the packages' own dependencies.
#
#   scripts/build-image-natively.sh                  build stage (deps.sh, cmake with the
#                                                    Dockerfile's BUILD_CMAKE_ARGS, install of
#                                                    component "server") into a temp dir, then
#                                                    the runtime checks
#   scripts/build-image-natively.sh --from-build DIR skip the build: stage from an existing
#                                                    build tree (what the ctest test does)
#   --out DIR        keep the staged root filesystem there (default: a temp dir, removed)
#   --build-dir DIR  build there and keep it (default: a temp dir, removed)
#   --skip-deps      do not run scripts/deps.sh
#
# Exit 0 when every check passes, 1 on a failed check, 77 (ctest skip) when DIR has no built
# hotkey-coordinator or the Debian tools (dpkg, apt-cache, ldd) are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DOCKERFILE=$ROOT/deploy/docker/Dockerfile

from_build=""
out=""
build_dir=""
skip_deps=0
while [ $# -gt 0 ]; do
  case "$1" in
    --from-build) from_build=$(cd "${2:?--from-build needs a directory}" && pwd); shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --skip-deps) skip_deps=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "build-image-natively.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

for tool in dpkg apt-cache ldd cmake; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found: this check needs a Debian system"
    exit 77
  fi
done

# One ARG line each in the Dockerfile is the single source of truth for both.
dockerfile_arg() {
  sed -n "s/^ARG $1=\"\\(.*\\)\"$/\\1/p" "$DOCKERFILE" | head -1
}
BUILD_CMAKE_ARGS=$(dockerfile_arg BUILD_CMAKE_ARGS)
RUNTIME_PACKAGES=$(dockerfile_arg RUNTIME_PACKAGES)
if [ -z "$BUILD_CMAKE_ARGS" ] || [ -z "$RUNTIME_PACKAGES" ]; then
  echo "FAIL: $DOCKERFILE lacks a one-line ARG BUILD_CMAKE_ARGS=\"...\" or ARG RUNTIME_PACKAGES=\"...\""
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=${out:-$work/rootfs}
mkdir -p "$stage"

# --- build stage -----------------------------------------------------------------------------
if [ -n "$from_build" ]; then
  build=$from_build
  if [ ! -x "$build/bin/hotkey-coordinator" ]; then
    echo "SKIP: $build/bin/hotkey-coordinator is not built"
    exit 77
  fi
else
  [ "$skip_deps" = 1 ] || scripts/deps.sh
  build=${build_dir:-$work/build}
  echo "== build stage: cmake $BUILD_CMAKE_ARGS"
  # shellcheck disable=SC2086  # the Dockerfile's argument list is split on purpose
  cmake -S "$ROOT" -B "$build" $BUILD_CMAKE_ARGS >"$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }
  cmake --build "$build" -j"${HOTKEY_JOBS:-2}"
fi
cmake --install "$build" --component server --prefix "$stage/usr/local" --strip >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
mkdir -p "$stage/usr/local/libexec/hotkey"
for ex in "$build"/bin/*; do
  case "$(basename "$ex")" in
    hotkey-coordinator|hotkeyctl) ;;
    *example*|*demo*) install -m 0755 "$ex" "$stage/usr/local/libexec/hotkey/" ;;
  esac
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- what the runtime stage copies ---------------------------------------------------------
for exe in hotkey-coordinator hotkeyctl; do
  if [ -x "$build/bin/$exe" ] && [ ! -x "$stage/usr/local/bin/$exe" ]; then
    fail "install component 'server' does not install $exe (cmake/HotkeyCPack.cmake)"
  fi
done
[ -x "$stage/usr/local/bin/hotkey-coordinator" ] || fail "no hotkey-coordinator staged"
demo=$(sed -n 's|.*entrypoint: \["/usr/local/libexec/hotkey/\([^"]*\)"\].*|\1|p' \
  "$ROOT/deploy/docker-compose.yml" | head -1)
if [ -n "$demo" ] && [ -x "$build/bin/$demo" ] && [ ! -x "$stage/usr/local/libexec/hotkey/$demo" ]; then
  fail "the compose demo producer $demo is built but not staged"
fi

# --- runtime libraries -----------------------------------------------------------------------
# Packages a debian:bookworm-slim image has before any apt-get install (Priority: required).
BASE_PACKAGES="libc6 libgcc-s1"
# shellcheck disable=SC2086
provided=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances $RUNTIME_PACKAGES $BASE_PACKAGES 2>/dev/null |
  sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)\(:[a-z0-9]*\)\?$/\1/p' | sort -u)
# shellcheck disable=SC2086
for p in $RUNTIME_PACKAGES; do
  grep -qx "$p" <<<"$provided" || fail "runtime package $p is unknown to apt-cache (typo?)"
done

# Unique library paths over all staged ELF files, then one dpkg -S for all of them (it is slow
# per call).
checked=0
declare -A lib_users=()
while IFS= read -r -d '' elf; do
  [ "$(head -c 4 "$elf" | od -An -c | tr -d ' ')" = "177ELF" ] || continue
  checked=$((checked + 1))
  libs=$(ldd "$elf" 2>&1) || { fail "ldd $elf: $libs"; continue; }
  if grep -q "not found" <<<"$libs"; then
    fail "$(basename "$elf"): $(echo "$libs" | grep "not found" | tr '\n' ' ')"
  fi
  while read -r path; do
    [ -n "$path" ] && lib_users[$path]+="$(basename "$elf") "
  done < <(echo "$libs" | sed -n 's/.*=> \(\/[^ ]*\) (0x.*/\1/p')
done < <(find "$stage/usr/local/bin" "$stage/usr/local/libexec" -type f -print0)

declare -A owner_of=()
if [ ${#lib_users[@]} -gt 0 ]; then
  # dpkg knows a library by the path its package installed; ldd may print /lib/... for a file
  # the package put in /usr/lib/... (merged /usr), so ask for both spellings.
  queries=()
  for path in "${!lib_users[@]}"; do queries+=("$path" "$(readlink -f "$path")"); done
  for path in "${!lib_users[@]}"; do queries+=("/usr${path#/usr}"); done
  while IFS= read -r line; do
    pkgs=${line%%: /*}
    file=${line#*: }
    owner_of[$file]=${pkgs%%:*}
  done < <(dpkg -S "${queries[@]}" 2>/dev/null | grep -v "^diversion" || true)
fi
for path in "${!lib_users[@]}"; do
  real=$(readlink -f "$path")
  owner=${owner_of[$path]:-${owner_of[$real]:-${owner_of[/usr${path#/usr}]:-}}}
  owner=${owner%%,*}
  if [ -z "$owner" ]; then
    fail "${lib_users[$path]}load $path, which no Debian package owns"
  elif ! grep -qx "$owner" <<<"$provided"; then
    fail "${lib_users[$path]}load $path from package $owner, which RUNTIME_PACKAGES does not pull in"
  fi
done

[ "$checked" -gt 0 ] || fail "no ELF binary staged"

# --- the binaries start in the staged layout --------------------------------------------------
"$stage/usr/local/bin/hotkey-coordinator" --help >/dev/null || fail "hotkey-coordinator --help failed"
if [ -x "$stage/usr/local/bin/hotkeyctl" ]; then
  "$stage/usr/local/bin/hotkeyctl" --help >/dev/null || fail "hotkeyctl --help failed"
fi

if [ "$failures" -gt 0 ]; then
  echo "build-image-natively.sh: $failures problem(s)"
  exit 1
fi
echo "build-image-natively.sh: OK: $checked binaries staged in $stage; every shared library comes from RUNTIME_PACKAGES ($RUNTIME_PACKAGES)"
