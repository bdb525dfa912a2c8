#!/bin/sh
# Installs common + client + the package files from a build tree into a scratch prefix, then
# builds a separate project against it twice: with find_package(hotkey) and with pkg-config.
# usage: package_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -eu
build=$1
src=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
for dir in common client; do
  cmake -DCMAKE_INSTALL_PREFIX="$prefix" -P "$build/$dir/cmake_install.cmake" >/dev/null
done
# The top-level rules (export set, config, pkg-config file) without recursing into the other
# folders, whose binaries a partial build may not have.
cmake -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LOCAL_ONLY=ON \
  -P "$build/cmake_install.cmake" >/dev/null

# The librdkafka plugin is installed with the client library (when the tree built it).
if [ -f "$build/lib/libhotkey-rdkafka.so" ] && ! ls "$prefix"/lib*/libhotkey-rdkafka.so >/dev/null 2>&1; then
  echo "package_test: libhotkey-rdkafka.so was not installed with the client library" >&2
  exit 1
fi

cmake -S "$src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"

libdir=$(ls -d "$prefix"/lib*/pkgconfig)
PKG_CONFIG_PATH=$libdir:${PKG_CONFIG_PATH:-}
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
c++ -o "$work/pc-consumer" "$src/main.cc" $(pkg-config --cflags --libs hotkey-client)
"$work/pc-consumer"
