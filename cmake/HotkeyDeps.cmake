# Every dependency is a Debian package (scripts/deps.sh installs them), found the standard way.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(RocksDB REQUIRED)
find_package(prometheus-cpp REQUIRED)

pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
pkg_check_modules(RDKAFKAXX REQUIRED IMPORTED_TARGET rdkafka++)
# cpp-httplib is a compiled library on Debian: its pkg-config flags (OpenSSL, zlib, brotli)
# are part of its ABI and must be used as given.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# The coordinator sets up httplib's SSLServer through OpenSSL's own API (TLS settings).
find_package(OpenSSL REQUIRED)

if(HOTKEY_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(HOTKEY_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
