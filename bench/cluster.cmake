# Cluster-mode ingest through Kafka (run by hand; docs/BENCHMARKS.md "Cluster mode"). Uses the
# cluster tests' harness (real or mock Kafka, coordinator processes, report builder).
if(HOTKEY_BUILD_TESTS)
  add_executable(cluster_bench ${CMAKE_CURRENT_LIST_DIR}/cluster_bench.cc)
  target_link_libraries(cluster_bench PRIVATE hotkey::coordinator hotkey::test_support
    hotkey::test_kafka PkgConfig::RDKAFKA
    nlohmann_json::nlohmann_json GTest::gtest hotkey_warnings)
  target_include_directories(cluster_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/cluster
    ${CMAKE_SOURCE_DIR}/tests/coordinator)
  target_compile_definitions(cluster_bench PRIVATE HOTKEY_BIN_DIR="${CMAKE_RUNTIME_OUTPUT_DIRECTORY}")
  add_dependencies(cluster_bench hotkey-coordinator)
endif()
