# CPack: two Debian packages.
# - "hotkey-coordinator", the server side only, i.e. the install component "server":
#   hotkey-coordinator, hotkeyctl, the systemd unit and the operations docs. The client library,
#   headers and CMake package are installed by `cmake --install` (default component) and are
#   deliberately not in this .deb. deploy/docker/Dockerfile installs the same component, so the
#   image and the package hold the same files.
# - "hotkey-rdkafka-plugin", component "plugin": libhotkey-rdkafka.so, the librdkafka plugin
#   producers load with plugin.library.paths=libhotkey-rdkafka (client/plugin/), self-contained
#   (the client library is linked into it), for hosts that run producers.
#
#   cmake --build build && (cd build && cpack -G DEB)
#     ->  build/hotkey-coordinator_<v>_<arch>.deb, build/hotkey-rdkafka-plugin_<v>_<arch>.deb

set(HOTKEY_SERVER_COMPONENT server)
foreach(_hotkey_exe hotkey-coordinator hotkeyctl)
  if(TARGET ${_hotkey_exe})
    install(TARGETS ${_hotkey_exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
            COMPONENT ${HOTKEY_SERVER_COMPONENT})
  endif()
endforeach()
# With the package prefix /usr this is /usr/lib/systemd/system, on systemd's unit search path
# (Debian 12 is merged-/usr).
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/deploy/systemd/hotkey-coordinator.service
        DESTINATION lib/systemd/system COMPONENT ${HOTKEY_SERVER_COMPONENT})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/docs/OPERATIONS.md ${CMAKE_CURRENT_SOURCE_DIR}/docs/openapi.yaml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/hotkey-coordinator
        COMPONENT ${HOTKEY_SERVER_COMPONENT} OPTIONAL)

set(CPACK_PACKAGE_NAME hotkey)
set(CPACK_PACKAGE_VENDOR "hotkey")
set(CPACK_PACKAGE_CONTACT "hotkey maintainers <hotkey@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Fleet-wide hot-key coordinator for Kafka producers (verified salt tables)")
set(CPACK_PACKAGE_DESCRIPTION
    "Collects key-frequency sketches from Kafka producers, detects fleet-wide hot keys and
publishes versioned, verified salt tables that spread them over distinct partitions.
Includes hotkeyctl (offline partition analysis and remote operator commands).")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR OFF)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${HOTKEY_SERVER_COMPONENT})
if(TARGET hotkey_rdkafka_plugin)
  list(APPEND CPACK_COMPONENTS_ALL plugin)
endif()
set(CPACK_COMPONENT_PLUGIN_DESCRIPTION
    "librdkafka plugin that routes hot keys by configuration alone
libhotkey-rdkafka.so: any librdkafka-based producer (kcat, confluent-kafka for Python, Go,
.NET...) loads it with plugin.library.paths=libhotkey-rdkafka and
hotkey.coordinator.url=..., then samples and reports its keys and spreads the keys the
hotkey coordinator lists over their verified salts, with no code change.")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME hotkey-rdkafka-plugin)
set(CPACK_DEBIAN_PLUGIN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PLUGIN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PLUGIN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/plugin/triggers)
# The plugin links no librdkafka (it calls the one that loads it: client/plugin/rdkafka_forward.cc),
# so dpkg-shlibdeps cannot name it; a producer host still needs one for kcat and the bindings.
set(CPACK_DEBIAN_PLUGIN_PACKAGE_DEPENDS "librdkafka1 (>= 1.6.0)")
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME hotkey-coordinator)
set(CPACK_DEBIAN_SERVER_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Runtime dependencies from the binaries' ELF NEEDED entries (dpkg-shlibdeps), so they match
# the Debian libraries the build linked against.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
