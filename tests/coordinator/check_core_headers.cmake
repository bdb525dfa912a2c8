# layering.core_headers: every header of coordinator/core/ compiles on its own with only the
# core's and common's include directories, and pulls in (directly or through other headers)
# no header of cpp-httplib, RocksDB, prometheus-cpp or librdkafka: the core stays
# transport-free and storage-free. -M (not -MM) lists system headers too, which is where those
# libraries live on Debian.
# cmake -DCXX=... -DCORE_DIR=... -DCOMMON_INCLUDE=... -P check_core_headers.cmake
file(GLOB headers ${CORE_DIR}/*.h)
list(LENGTH headers n)
if(n EQUAL 0)
  message(FATAL_ERROR "no headers under ${CORE_DIR}")
endif()
set(forbidden "httplib.h" "/rocksdb/" "/prometheus/" "/librdkafka/" "rdkafka.h")
set(failed "")
foreach(h IN LISTS headers)
  execute_process(
    COMMAND ${CXX} -std=c++20 -M -x c++ -I${CORE_DIR} -I${COMMON_INCLUDE} ${h}
    OUTPUT_VARIABLE deps ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(APPEND failed "\n${h} does not compile on its own:\n${err}")
    continue()
  endif()
  foreach(bad IN LISTS forbidden)
    string(FIND "${deps}" "${bad}" pos)
    if(NOT pos EQUAL -1)
      string(APPEND failed "\n${h} includes ${bad} (the core must not depend on it)")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "coordinator core layering broken:${failed}")
endif()
message(STATUS "${n} core headers checked: no transport or storage header reached")
