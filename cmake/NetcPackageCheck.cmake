# NetcPackageCheck.cmake -- run by cpack before it builds the package
# (CPACK_PRE_BUILD_SCRIPTS): refuses a build made with sanitizers, whose
# binaries need libasan/libubsan and must not be shipped.
if(CPACK_NETC_SANITIZE)
  message(FATAL_ERROR "this build uses sanitizers (NETC_SANITIZE=${CPACK_NETC_SANITIZE}); "
                      "package a build without them: scripts/package_deb.sh")
endif()
