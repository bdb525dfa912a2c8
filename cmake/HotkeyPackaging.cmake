# The installed package: find_package(hotkey) -> hotkey::client (and hotkey::common), plus a
# pkg-config file (hotkey-client.pc) for non-CMake builds.
include(CMakePackageConfigHelpers)

set(HOTKEY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hotkey)

install(EXPORT hotkeyTargets
  NAMESPACE hotkey::
  FILE hotkeyTargets.cmake
  DESTINATION ${HOTKEY_CMAKE_DIR})

configure_package_config_file(
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/hotkeyConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/hotkeyConfig.cmake
  INSTALL_DESTINATION ${HOTKEY_CMAKE_DIR})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/hotkeyConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/hotkeyConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/hotkeyConfigVersion.cmake
  DESTINATION ${HOTKEY_CMAKE_DIR})

# Relocatable: the prefix is found from the .pc file's own location.
file(RELATIVE_PATH HOTKEY_PC_TO_PREFIX
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/hotkey-client.pc.in
  ${CMAKE_CURRENT_BINARY_DIR}/hotkey-client.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hotkey-client.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
