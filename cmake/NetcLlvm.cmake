# NetcLlvm.cmake -- LLVM 19 for code generation (codegen/llvm, docs/codegen.md):
# NETC_WITH_LLVM is AUTO (build the plugin libnetc-llvm.so when Debian's
# llvm-19-dev is found), ON (require it) or OFF. Only the plugin links LLVM,
# through the single shared library target `LLVM`; netc itself never does,
# so it starts where libLLVM is absent. Sets NETC_HAVE_LLVM.
set(NETC_WITH_LLVM AUTO CACHE STRING "Build the LLVM code generator plugin (AUTO, ON or OFF)")
set(NETC_HAVE_LLVM OFF)
if(NOT NETC_WITH_LLVM STREQUAL "OFF")
  set(_netc_llvm_hints /usr/lib/llvm-19/lib/cmake/llvm /usr/lib/llvm-19/cmake)
  if(NETC_WITH_LLVM STREQUAL "ON")
    find_package(LLVM 19.1 CONFIG REQUIRED HINTS ${_netc_llvm_hints})
  else()
    find_package(LLVM 19.1 CONFIG QUIET HINTS ${_netc_llvm_hints})
  endif()
  if(LLVM_FOUND AND TARGET LLVM)
    set(NETC_HAVE_LLVM ON)
    message(STATUS "netc: LLVM ${LLVM_PACKAGE_VERSION}: netc build and --emit=llvm (plugin libnetc-llvm.so)")
  elseif(NETC_WITH_LLVM STREQUAL "ON")
    message(FATAL_ERROR "netc: NETC_WITH_LLVM=ON but LLVM 19's shared library target was not found "
                        "(scripts/setup.sh --llvm installs llvm-19-dev and lld-19)")
  else()
    message(STATUS "netc: LLVM 19 not found: no netc build (scripts/setup.sh --llvm installs llvm-19-dev and lld-19)")
  endif()
endif()
