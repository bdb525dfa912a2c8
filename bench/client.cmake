# Client benchmarks (included from bench/CMakeLists.txt): routing vs librdkafka's own
# partitioner with allocations counted, sampler scaling, produce rate to the mock cluster.
add_executable(client_bench ${CMAKE_CURRENT_LIST_DIR}/client_bench.cc
  ${CMAKE_CURRENT_LIST_DIR}/alloc_counter.cc)
target_link_libraries(client_bench PRIVATE
  hotkey::client hotkey::common PkgConfig::RDKAFKA benchmark::benchmark hotkey_warnings)

# Fixed-count routing driver for callgrind instruction counts (docs/BENCHMARKS.md, "Client").
add_executable(route_instructions ${CMAKE_CURRENT_LIST_DIR}/route_instructions.cc
  ${CMAKE_CURRENT_LIST_DIR}/alloc_counter.cc)
target_link_libraries(route_instructions PRIVATE
  hotkey::client hotkey::common PkgConfig::RDKAFKA hotkey_warnings)
