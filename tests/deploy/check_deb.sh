#!/usr/bin/env bash
# Builds the .deb with CPack (cmake/HotkeyCPack.cmake) from a build tree and checks it: the
# coordinator, hotkeyctl and the systemd unit in place, the unit's ExecStart pointing at the
# packaged binary, no client library or headers, runtime dependencies from dpkg-shlibdeps,
# maintainer scripts present, and the packaged binary runs. When the tree has the librdkafka
# plugin, the second package (hotkey-rdkafka-plugin) holds libhotkey-rdkafka.so exporting only
# conf_init, depends on librdkafka1, refreshes the ld.so cache, and kcat loads it from the
# package (its hotkey.* validation answers). cpack builds the tree's
# "preinstall" target (everything) first: a no-op after a full build.
# Exit 77 (ctest skip) when cpack/dpkg-deb are missing or the tree has no coordinator.
set -euo pipefail
build=${1:?usage: check_deb.sh BUILD_DIR}
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found (cmake and dpkg-dev provide them)"
    exit 77
  fi
done
if [ ! -f "$build/CPackConfig.cmake" ] || [ ! -x "$build/bin/hotkey-coordinator" ]; then
  echo "SKIP: $build has no CPackConfig.cmake or no built hotkey-coordinator"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$build" && cpack -G DEB -B "$tmp/out") >"$tmp/cpack.log" 2>&1 || {
  cat "$tmp/cpack.log"; echo "FAIL: cpack failed"; exit 1; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mapfile -t debs < <(find "$tmp/out" -maxdepth 1 -name 'hotkey-coordinator_*.deb')
if [ ${#debs[@]} -ne 1 ]; then
  cat "$tmp/cpack.log"
  echo "FAIL: expected one hotkey-coordinator .deb, got ${#debs[@]}: ${debs[*]:-none}"
  exit 1
fi
deb=${debs[0]}
echo "package: $(basename "$deb")"
[ "$(dpkg-deb -f "$deb" Package)" = hotkey-coordinator ] || fail "package name is not hotkey-coordinator"

contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
expect=(./usr/bin/hotkey-coordinator ./usr/lib/systemd/system/hotkey-coordinator.service)
[ -x "$build/bin/hotkeyctl" ] && expect+=(./usr/bin/hotkeyctl)
for f in "${expect[@]}"; do
  grep -qx "$f" <<<"$contents" || fail "$f is not in the package"
done
if echo "$contents" | grep -E '^\./usr/(include|lib/[^s].*\.(a|so)|lib/.*/cmake)'; then
  fail "the server package must not carry the client library, headers or CMake package"
fi

depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 libstdc++6 libcpp-httplib0.11 libprometheus-cpp-core1.0; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib (dpkg-shlibdeps)"
done

dpkg-deb -e "$deb" "$tmp/control"
for s in postinst prerm postrm; do
  [ -x "$tmp/control/$s" ] || fail "maintainer script $s missing or not executable"
done

dpkg-deb -x "$deb" "$tmp/root"
grep -q '^ExecStart=/usr/bin/hotkey-coordinator ' "$tmp/root/usr/lib/systemd/system/hotkey-coordinator.service" ||
  fail "the packaged unit's ExecStart does not run /usr/bin/hotkey-coordinator"
"$tmp/root/usr/bin/hotkey-coordinator" --help >/dev/null || fail "packaged hotkey-coordinator --help failed"
if [ -x "$tmp/root/usr/bin/hotkeyctl" ]; then
  "$tmp/root/usr/bin/hotkeyctl" --help >/dev/null || fail "packaged hotkeyctl --help failed"
fi

# The librdkafka plugin's package.
if [ -f "$build/lib/libhotkey-rdkafka.so" ]; then
  mapfile -t pdebs < <(find "$tmp/out" -maxdepth 1 -name 'hotkey-rdkafka-plugin_*.deb')
  if [ ${#pdebs[@]} -ne 1 ]; then
    fail "expected one hotkey-rdkafka-plugin .deb, got ${#pdebs[@]}"
  else
    pdeb=${pdebs[0]}
    echo "package: $(basename "$pdeb")"
    pcontents=$(dpkg-deb -c "$pdeb" | awk '{print $NF}')
    so=$(grep -E '^\./usr/lib/(.*/)?libhotkey-rdkafka\.so$' <<<"$pcontents" || true)
    [ -n "$so" ] || fail "libhotkey-rdkafka.so is not under /usr/lib in the plugin package"
    if grep -E '^\./usr/(include|bin)/' <<<"$pcontents"; then
      fail "the plugin package must hold the plugin only"
    fi
    pdepends=$(dpkg-deb -f "$pdeb" Depends)
    echo "Depends: $pdepends"
    grep -q '\blibrdkafka1\b' <<<"$pdepends" || fail "plugin Depends lacks librdkafka1 (declared in cmake/HotkeyCPack.cmake)"
    dpkg-deb -e "$pdeb" "$tmp/pcontrol"
    grep -q 'ldconfig' "$tmp/pcontrol/triggers" 2>/dev/null || fail "plugin package has no ldconfig trigger"
    dpkg-deb -x "$pdeb" "$tmp/proot"
    exported=$(nm -D --defined-only "$tmp/proot/${so#./}" | awk '{print $3}' | sort -u | tr '\n' ' ')
    [ "$exported" = "conf_init " ] || fail "the plugin must export conf_init only, exports: $exported"
    if command -v kcat >/dev/null 2>&1; then
      out=$(echo 'k:v' | kcat -P -b 127.0.0.1:1 -t t -K: \
              -X "plugin.library.paths=$tmp/proot/${so#./}" -X hotkey.sample.rate=2 2>&1 || true)
      grep -q 'hotkey.sample.rate' <<<"$out" ||
        fail "kcat did not load the packaged plugin (expected its hotkey.sample.rate error): $out"
    fi
  fi
fi

if [ "$failures" -gt 0 ]; then
  echo "check_deb.sh: $failures problem(s)"
  exit 1
fi
echo "check_deb.sh: OK"
