# layering.coordinator: the coordinator's folders keep their layers (docs/ARCHITECTURE.md,
# "Coordinator layers").
# - Every file of coordinator/core/ (headers on their own, sources as compiled) builds with only
#   the core's and common's include directories and pulls in, directly or through other
#   headers, no header of cpp-httplib, RocksDB, prometheus-cpp or librdkafka, nor <iostream>:
#   the core is transport-free, storage-free and does no I/O of its own. -M (not -MM) lists
#   system headers too, which is where those libraries live on Debian.
# - No core source reads the environment or writes to the standard streams (getenv, environ,
#   std::cout, std::cerr, printf to stdout/stderr): the service reads the environment and owns
#   the process's output.
# - A folder includes headers of its own and of the folders below it only:
#   core <- store, metrics, kafka; metrics <- http; everything <- service. So no two folders
#   include each other.
# - The transports (http/, kafka/) and metrics/ see the core through its interfaces by audience
#   (core/coordinator_api.h): none includes coordinator.h, the Coordinator class, nor calls
#   store() or board() on it.
# cmake -DCXX=... -DCOORDINATOR_DIR=... -DCOMMON_INCLUDE=... -P check_layering.cmake
set(CORE_DIR ${COORDINATOR_DIR}/core)
file(GLOB headers ${CORE_DIR}/*.h)
file(GLOB sources ${CORE_DIR}/*.cc)
list(LENGTH headers nh)
list(LENGTH sources ns)
if(nh EQUAL 0 OR ns EQUAL 0)
  message(FATAL_ERROR "no headers or sources under ${CORE_DIR}")
endif()
set(forbidden "httplib.h" "/rocksdb/" "/prometheus/" "/librdkafka/" "rdkafka.h")
set(failed "")
foreach(f IN LISTS headers sources)
  execute_process(
    COMMAND ${CXX} -std=c++20 -M -x c++ -I${CORE_DIR} -I${COMMON_INCLUDE} ${f}
    OUTPUT_VARIABLE deps ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(APPEND failed "\n${f} does not compile on its own:\n${err}")
    continue()
  endif()
  foreach(bad IN LISTS forbidden)
    string(FIND "${deps}" "${bad}" pos)
    if(NOT pos EQUAL -1)
      string(APPEND failed "\n${f} includes ${bad} (the core must not depend on it)")
    endif()
  endforeach()
  if(deps MATCHES "/iostream[ \n\\\\]")
    string(APPEND failed "\n${f} includes <iostream> (the core writes through its LogSink)")
  endif()
endforeach()
foreach(f IN LISTS sources headers)
  file(READ ${f} text)
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")  # comments may name them
  foreach(bad "getenv" "environ" "std::cout" "std::cerr" "stdout" "stderr")
    if(text MATCHES "[^A-Za-z_]${bad}[^A-Za-z_]")
      string(APPEND failed "\n${f} uses ${bad} (the core reads no environment and writes no "
             "stream: the service does)")
    endif()
  endforeach()
endforeach()

# Folder layers: which folders' headers each folder may include.
set(allowed_core core)
set(allowed_store core store)
set(allowed_metrics core metrics)
set(allowed_kafka core kafka)
set(allowed_http core metrics http)
set(allowed_service core store metrics http kafka service)
set(folders core store metrics kafka http service)
foreach(folder IN LISTS folders)
  file(GLOB owned RELATIVE ${COORDINATOR_DIR}/${folder} ${COORDINATOR_DIR}/${folder}/*.h)
  foreach(h IN LISTS owned)
    set(home_${h} ${folder})
  endforeach()
endforeach()
set(checked 0)
foreach(folder IN LISTS folders)
  file(GLOB files ${COORDINATOR_DIR}/${folder}/*.h ${COORDINATOR_DIR}/${folder}/*.cc)
  foreach(f IN LISTS files)
    math(EXPR checked "${checked} + 1")
    file(STRINGS ${f} includes REGEX "^#include \"[^\"/]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" h "${line}")
      if(NOT DEFINED home_${h})
        continue()
      endif()
      list(FIND allowed_${folder} ${home_${h}} ok)
      if(ok EQUAL -1)
        string(APPEND failed "\n${f} includes ${home_${h}}/${h}: ${folder}/ may include only "
               "${allowed_${folder}}")
      endif()
    endforeach()
  endforeach()
endforeach()

# The core's internal headers (a topic's state and lock) stay inside core/: every other folder,
# the service included, reaches topics through the Coordinator's interfaces.
foreach(folder store metrics kafka http service)
  file(GLOB files ${COORDINATOR_DIR}/${folder}/*.h ${COORDINATOR_DIR}/${folder}/*.cc)
  foreach(f IN LISTS files)
    file(STRINGS ${f} internal REGEX "^#include \"(topic|coordinator_topic)\\.h\"")
    if(internal)
      string(APPEND failed "\n${f} includes a core-internal header (${internal})")
    endif()
  endforeach()
endforeach()

foreach(folder http kafka metrics)
  file(GLOB files ${COORDINATOR_DIR}/${folder}/*.h ${COORDINATOR_DIR}/${folder}/*.cc)
  foreach(f IN LISTS files)
    file(READ ${f} text)
    string(REGEX REPLACE "//[^\n]*" "" text "${text}")
    if(text MATCHES "#include \"coordinator\\.h\"" OR text MATCHES "[^A-Za-z_]Coordinator[ ]*&"
       OR text MATCHES "\\.(store|board)\\(\\)")
      string(APPEND failed "\n${f} reaches the Coordinator itself (coordinator.h, Coordinator&, "
             "store() or board()): ${folder}/ takes the core's interfaces (coordinator_api.h)")
    endif()
  endforeach()
endforeach()

if(failed)
  message(FATAL_ERROR "coordinator layering broken:${failed}")
endif()
message(STATUS "${nh} core headers and ${ns} core sources checked: no transport, storage, "
        "environment or stream; ${checked} coordinator files keep their folder's layer")
