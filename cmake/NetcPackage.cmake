# NetcPackage.cmake -- `cpack -G DEB` makes netc_VERSION_ARCH.deb from what
# `cmake --install` installs (cmake/NetcInstall.cmake), and, when the MPI
# plugin is built, netc-mpi_VERSION_ARCH.deb holding it alone: netc starts and
# trains one process without MPI, so only netc-mpi depends on Open MPI.
# dpkg-shlibdeps computes Depends from the ELF files (dpkg-dev and file,
# scripts/setup.sh).
# Package a build without sanitizers (scripts/package_deb.sh): a sanitized
# build is refused, as its Depends would name libasan.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME netc)
set(CPACK_PACKAGE_VENDOR "netc")
set(CPACK_PACKAGE_CONTACT "netc maintainers <netc@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "compiler and runner for Net#, Azure ML's neural-network language")
set(CPACK_PACKAGE_DESCRIPTION
    "netc checks Net# network files the way a compiler checks C (every error, located, with fix-its), "
    "shows each layer's shape, parameters and FLOPs, formats files, and trains, evaluates and runs the "
    "networks on the CPU. The package holds the netc command, libnetc.so with its C++ and C API, the "
    "headers, a CMake package (find_package(netc)) and a pkg-config file (netc.pc).")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libnetc.so's own shlibs file and the ldconfig trigger; the SONAME carries
# the ABI, so any later version of the package satisfies a program.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# dpkg-shlibdeps names "libopenblas0", which any OpenBLAS variant satisfies;
# netc needs the OpenMP one (runtime/cpu/CMakeLists.txt: the pthread build
# oversubscribes the cores), which its run path points at.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-openmp")
# One package per install component: everything but the plugin (the default
# component) is netc; the MPI plugin (runtime/comm/mpi, component mpi) is
# netc-mpi, the LLVM plugin (codegen/llvm, component llvm) netc-llvm.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_NAME netc)
set(CPACK_COMPONENTS_ALL Unspecified)
if(TARGET netc_comm_mpi)
  list(APPEND CPACK_COMPONENTS_ALL mpi)
  set(CPACK_DEBIAN_MPI_PACKAGE_NAME netc-mpi)
  set(CPACK_DEBIAN_MPI_PACKAGE_DEPENDS "netc (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_MPI_PACKAGE_SECTION science)
  set(CPACK_COMPONENT_MPI_DESCRIPTION
      "The MPI communicator plugin of netc: data-parallel training over several processes and machines "
      "(mpirun -np N netc train, srun netc train, netc train --ranks N), with Open MPI.")
endif()
# The LLVM code generator (codegen/llvm, component llvm) is netc-llvm: only
# it depends on libLLVM (about 126 MB), so netc installs and runs without it.
if(TARGET netc_codegen_llvm)
  list(APPEND CPACK_COMPONENTS_ALL llvm)
  set(CPACK_DEBIAN_LLVM_PACKAGE_NAME netc-llvm)
  set(CPACK_DEBIAN_LLVM_PACKAGE_DEPENDS "netc (= ${PROJECT_VERSION}), gcc | clang, lld-19") # libllvm19: dpkg-shlibdeps
  set(CPACK_DEBIAN_LLVM_PACKAGE_SECTION science)
  set(CPACK_COMPONENT_LLVM_DESCRIPTION
      "The LLVM code generator of netc: netc build compiles a trained network into a native inference library "
      "with a C header (netc compile --emit=llvm prints its IR).")
endif()
set(CPACK_NETC_SANITIZE "${NETC_SANITIZE}")
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/NetcPackageCheck.cmake)
include(CPack)
