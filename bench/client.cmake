# Client benchmarks (included from bench/CMakeLists.txt): routing vs librdkafka's own
# partitioner with allocations counted, sampler scaling, produce rate to the mock cluster.
add_executable(client_bench ${CMAKE_CURRENT_LIST_DIR}/client_bench.cc
  ${CMAKE_CURRENT_LIST_DIR}/alloc_counter.cc)
target_link_libraries(client_bench PRIVATE
  hotkey::client hotkey::common hotkey::test_support PkgConfig::RDKAFKA benchmark::benchmark
  hotkey_warnings)

# Fixed-count routing driver for callgrind instruction counts (docs/BENCHMARKS.md, "Client").
add_executable(route_instructions ${CMAKE_CURRENT_LIST_DIR}/route_instructions.cc
  ${CMAKE_CURRENT_LIST_DIR}/alloc_counter.cc)
target_link_libraries(route_instructions PRIVATE
  hotkey::client hotkey::common hotkey::test_support PkgConfig::RDKAFKA hotkey_warnings)
# CI guard: instructions per record of routing and of route + sampler, and zero allocations,
# against bench/route_budget.json (docs/BENCHMARKS.md, "Client").
hotkey_cost_guard(route_instructions route_cost_check route_budget 600)

# Fixed-count produce driver for callgrind: one produce call, plain librdkafka vs the wrapper.
add_executable(produce_instructions ${CMAKE_CURRENT_LIST_DIR}/produce_instructions.cc)
target_link_libraries(produce_instructions PRIVATE
  hotkey::client hotkey::common hotkey::test_support PkgConfig::RDKAFKA hotkey_warnings)
