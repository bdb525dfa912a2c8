# Bounded load test against the real coordinator process (run by hand; docs/RELIABILITY.md).
add_executable(load_bench ${CMAKE_CURRENT_LIST_DIR}/load_bench.cc)
target_link_libraries(load_bench PRIVATE
  hotkey::common PkgConfig::HTTPLIB nlohmann_json::nlohmann_json Threads::Threads hotkey_warnings)
target_compile_definitions(load_bench PRIVATE HOTKEY_BIN_DIR="${CMAKE_RUNTIME_OUTPUT_DIRECTORY}")
if(TARGET hotkey-coordinator)
  add_dependencies(load_bench hotkey-coordinator)
endif()
