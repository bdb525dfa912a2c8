# Coordinator benchmarks (ingest throughput/latency, long-poll fan-out, memory per topic).
# They drive the real hotkey-coordinator binary over loopback; see docs/BENCHMARKS.md.
add_executable(coordinator_bench ${CMAKE_CURRENT_LIST_DIR}/coordinator_bench.cc)
target_link_libraries(coordinator_bench PRIVATE
  hotkey::coordinator hotkey::test_support nlohmann_json::nlohmann_json benchmark::benchmark
  hotkey_warnings)
add_dependencies(coordinator_bench hotkey-coordinator)

# Fixed-count in-process ingest driver for callgrind instruction counts (docs/BENCHMARKS.md,
# "Coordinator"; the CI guard tests/perf/ingest_cost_check.py runs it).
add_executable(ingest_instructions ${CMAKE_CURRENT_LIST_DIR}/ingest_instructions.cc)
target_link_libraries(ingest_instructions PRIVATE hotkey::coordinator hotkey::test_support
  hotkey_warnings)
hotkey_cost_guard(ingest_instructions ingest_cost_check ingest_budget 900)

# Fixed-count planning driver (one topic's plan: window snapshot, detection, tables) for
# callgrind instruction counts; the CI guard bench/plan_cost_check.py runs it.
add_executable(plan_instructions ${CMAKE_CURRENT_LIST_DIR}/plan_instructions.cc)
target_link_libraries(plan_instructions PRIVATE hotkey::coordinator hotkey::test_support
  hotkey_warnings)
hotkey_cost_guard(plan_instructions plan_cost_check plan_budget 900)

# A fleet's list subscriptions (issue 27): N simulated producers over P processes against one
# coordinator with default settings, POST /v1/hotkeys/subscribe or per-topic long-polls; and a
# hotkey::Client's threads and connections with many topics. See docs/BENCHMARKS.md.
add_executable(subscription_fleet_bench ${CMAKE_CURRENT_LIST_DIR}/subscription_fleet_bench.cc)
find_package(ZLIB REQUIRED)  # --gzip: the simulated producers inflate their answers
target_link_libraries(subscription_fleet_bench PRIVATE
  hotkey::client hotkey::common hotkey::test_support PkgConfig::HTTPLIB
  nlohmann_json::nlohmann_json ZLIB::ZLIB hotkey_warnings)
add_dependencies(subscription_fleet_bench hotkey-coordinator)
