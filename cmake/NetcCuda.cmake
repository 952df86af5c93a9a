# NetcCuda.cmake -- whether and how the CUDA backend is built (docs/gpu.md).
# NETC_WITH_CUDA: AUTO (the default) builds it when nvcc is found, ON
# requires it, OFF leaves it out. Sets NETC_CUDA (ON/OFF) for the rest of
# the build. The CUDA runtime is linked statically (it finds the driver at
# run time, so netc starts on machines without one); cuBLAS and cuDNN are
# loaded on demand. Architectures: sm_80 and sm_90 unless
# CMAKE_CUDA_ARCHITECTURES or $CUDAARCHS says otherwise (scripts/test.sh
# compiles sm_90 only, to keep CI short). Warnings are errors in CUDA sources
# too, for nvcc's own warnings and for the host compiler's.
set(NETC_WITH_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE NETC_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)

option(NETC_BUILD_GPU_TESTS "Build the GPU test binary (tests/gpu) even without NETC_BUILD_TESTS" OFF)

set(NETC_CUDA OFF)
if(NETC_WITH_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(NETC_CUDA ON)
  else()
    message(STATUS "netc: no nvcc found; building without the CUDA backend (NETC_WITH_CUDA=ON to require it)")
  endif()
elseif(NETC_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  set(NETC_CUDA ON)
endif()

if(NETC_CUDA)
  # CUDAARCHS in the environment (CMake's own variable; scripts/test.sh sets
  # 90) or -DCMAKE_CUDA_ARCHITECTURES choose others.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  # nvcc compiles the host half of .cu files with the C++ compiler of the
  # rest of the build when it is GCC (nvcc's supported host compiler here).
  if(NOT CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
  endif()
  enable_language(CUDA)
  # C++20 as for the C++ sources. CMake 3.25 does not know that nvcc 12+
  # takes -std=c++20, so targets needing cxx_std_20 would be refused: tell it.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  # Debian's CMake 3.25.1 FindCUDAToolkit sets a property on CUDA::nvToolsExt
  # without checking that the target exists when the project requires 3.25,
  # and CUDA 13 has no nvToolsExt library: the find fails. Ask for it as a
  # 3.24 project (only this check reads the version), then restore.
  set(_netc_minimum_version ${CMAKE_MINIMUM_REQUIRED_VERSION})
  set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
  find_package(CUDAToolkit REQUIRED)
  set(CMAKE_MINIMUM_REQUIRED_VERSION ${_netc_minimum_version})
  set(NETC_CUDA_WARNINGS -Xcompiler=-Wall,-Wextra)
  if(NETC_WERROR)
    list(APPEND NETC_CUDA_WARNINGS -Werror=all-warnings -Xcompiler=-Werror)
  endif()
  message(STATUS "netc: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
endif()

# netc_cuda_warnings(target): the CUDA warnings for a target's .cu sources.
function(netc_cuda_warnings target)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${NETC_CUDA_WARNINGS}>")
endfunction()
