# NetcInstall.cmake -- what `cmake --install` puts under the prefix: the netc
# command (tools/netc), libnetc.so (api/, target netc::netc), the public
# headers (include/netc), a CMake package (find_package(netc)) and a
# pkg-config file (netc.pc). The CLI installs itself (tools/netc).
include(CMakePackageConfigHelpers)

set(NETC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/netc)

install(TARGETS netc_shared EXPORT netcTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/netc/netc.h ${PROJECT_SOURCE_DIR}/include/netc/Types.h
              ${PROJECT_SOURCE_DIR}/include/netc/Training.h ${PROJECT_SOURCE_DIR}/include/netc/Estimate.h
              ${PROJECT_SOURCE_DIR}/include/netc/netc_c.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/netc)
install(EXPORT netcTargets NAMESPACE netc:: DESTINATION ${NETC_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/netcConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/netcConfig.cmake
                              INSTALL_DESTINATION ${NETC_CMAKE_DIR})
# Before 1.0 a new minor version may break the API: only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/netcConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/netcConfig.cmake ${PROJECT_BINARY_DIR}/netcConfigVersion.cmake
        DESTINATION ${NETC_CMAKE_DIR})

# netc.pc finds the prefix from its own place (${pcfiledir}), so the tree
# works wherever it is installed (`cmake --install --prefix`, a .deb, dpkg -x).
file(RELATIVE_PATH NETC_PC_PREFIX_FROM_PCFILEDIR
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" NETC_PC_PREFIX_FROM_PCFILEDIR "${NETC_PC_PREFIX_FROM_PCFILEDIR}")
set(NETC_PC_SANITIZE_FLAGS "")
foreach(_s IN LISTS NETC_SANITIZERS)
  string(APPEND NETC_PC_SANITIZE_FLAGS " -fsanitize=${_s}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/netc.pc.in ${PROJECT_BINARY_DIR}/netc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/netc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
