# Coordinator benchmarks (ingest throughput/latency, long-poll fan-out, memory per topic).
# They drive the real hotkey-coordinator binary over loopback; see docs/BENCHMARKS.md.
add_executable(coordinator_bench ${CMAKE_CURRENT_LIST_DIR}/coordinator_bench.cc)
target_link_libraries(coordinator_bench PRIVATE
  hotkey::coordinator nlohmann_json::nlohmann_json benchmark::benchmark hotkey_warnings)
target_compile_definitions(coordinator_bench PRIVATE
  HOTKEY_BIN_DIR="${CMAKE_RUNTIME_OUTPUT_DIRECTORY}")
add_dependencies(coordinator_bench hotkey-coordinator)
