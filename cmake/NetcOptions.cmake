# NetcOptions.cmake -- warning and sanitizer settings for netc's own targets,
# per language: C and C++ sources get them through $<COMPILE_LANGUAGE:...>
# (and links through $<LINK_LANGUAGE:...>), so sources of another language
# (CUDA, later) are not handed flags their compiler does not take and get
# their own. netc_component(target) applies the warnings (-Werror with
# NETC_WERROR) and the include root; netc_warnings(target) the warnings
# alone; generated code (the ANTLR parser) gets neither.

# NETC_SANITIZERS: the list form of NETC_SANITIZE, also exported with
# netc::netc (api/CMakeLists.txt) and written into netc.pc.
string(REPLACE "," ";" NETC_SANITIZERS "${NETC_SANITIZE}")
if(NETC_SANITIZE)
  foreach(_s IN LISTS NETC_SANITIZERS)
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${_s}>")
    add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${_s}>")
  endforeach()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>")
  # The sanitized executables (the tests' and netc's) link position-dependent:
  # as PIEs each of their 100 MB carries about 1.2 million relative
  # relocations, which the loader applies at every start, writing to
  # thousands of pages (0.31 s a process on a 2-vCPU EPYC VM, where a page
  # fault is dear; 0.14 s without), and the suite starts thousands of them.
  # Builds without sanitizers (what users run) stay PIE.
  add_link_options("$<$<AND:$<LINK_LANGUAGE:C,CXX>,$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>>:-no-pie>")
  # GCC 12 gives every static datum of UBSan's checks (a source location and
  # type descriptors per check site) AddressSanitizer's redzones and a
  # descriptor each: 4.6 MB of data in the CLI's unit against 1.1 MB with
  # UBSan alone, 33 MB in netc. Each start registers it all and LeakSanitizer
  # scans it at exit, touching every page: 0.15 s a process on a 2-vCPU EPYC
  # VM, 0.10 s without global redzones (7.6 MB). So this build does not
  # instrument globals: an overflow of a global array's index is still
  # caught by UBSan's bounds check, and the fuzzers' clang build
  # (scripts/fuzz.sh) keeps ASan's redzones around globals.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND "address" IN_LIST NETC_SANITIZERS)
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:--param=asan-globals=0>")
  endif()
  # With -fsanitize=address GCC 12 reports false -Wmaybe-uninitialized
  # positives inside <regex> and <functional>.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-maybe-uninitialized>")
  endif()
endif()

# The warnings of netc's own code, one list per language.
set(NETC_CXX_WARNINGS -Wall -Wextra -Wpedantic)
set(NETC_C_WARNINGS -Wall -Wextra -Wpedantic)
# GCC 12 reports false -Wrestrict positives inside std::string at -O3
# (GCC bug 105329); the warning stays on for other compilers.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND NETC_CXX_WARNINGS -Wno-restrict)
endif()
if(NETC_WERROR)
  list(APPEND NETC_CXX_WARNINGS -Werror)
  list(APPEND NETC_C_WARNINGS -Werror)
endif()

function(netc_warnings target)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${NETC_CXX_WARNINGS}>"
                                           "$<$<COMPILE_LANGUAGE:C>:${NETC_C_WARNINGS}>")
endfunction()

function(netc_component target)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  netc_warnings(${target})
endfunction()

# netc_cold_code(target): the code no one waits on -- the front end, the
# passes, plan building, the API's glue, the LLVM emitter, the language
# server, the CLI, process management, data loading, checkpoints, each
# milliseconds or a one-off per run -- compiles at NETC_COLD_CODE_FLAGS in
# optimised builds: -O1 takes about half the compile time of -O3 on these
# template-heavy files (api: 45 s -> 15 s), and the main job builds from
# scratch. The kernels and optimisers keep the build type's level, and so do
# a cold target's files named by netc_hot_sources (per-batch loops). Empty
# compiles everything at the build type's level.
set(NETC_COLD_CODE_FLAGS "-O1" CACHE STRING
    "Optimisation of netc's compile-time and glue code in Release and RelWithDebInfo builds (empty: the build type's)")
# The optimised configurations: Release and RelWithDebInfo where their flags
# say -O2 or -O3 (test.sh's sanitizer tree builds RelWithDebInfo at -Og,
# which stays as it is).
set(_netc_optimised_configs "")
foreach(_config Release RelWithDebInfo)
  string(TOUPPER ${_config} _upper)
  if(CMAKE_CXX_FLAGS_${_upper} MATCHES "-O[23]")
    list(APPEND _netc_optimised_configs ${_config})
  endif()
endforeach()
string(REPLACE ";" "," NETC_OPTIMISED_CONFIGS "${_netc_optimised_configs}")

function(netc_cold_code target)
  if(NETC_COLD_CODE_FLAGS AND NETC_OPTIMISED_CONFIGS)
    target_compile_options(${target} PRIVATE
                           "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:${NETC_OPTIMISED_CONFIGS}>>:${NETC_COLD_CODE_FLAGS}>")
  endif()
endfunction()

# netc_kernel_code(target): the CPU backend's kernels, reference kernels,
# peak probes and optimiser loops compile at NETC_KERNEL_FLAGS after the
# build type's flags. scripts/test.sh's sanitizer tree, at -Og for the rest,
# passes -O2: its tests spend most of their time in these loops (a quick
# calibration 8.4 s at -Og, 4.1 s so), and users run them optimised. Empty:
# the build type's level.
set(NETC_KERNEL_FLAGS "" CACHE STRING
    "Extra compile options of the CPU kernels and optimiser loops (scripts/test.sh: -O2; empty: none)")
function(netc_kernel_code target)
  if(NETC_KERNEL_FLAGS)
    separate_arguments(_flags UNIX_COMMAND "${NETC_KERNEL_FLAGS}")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${_flags}>")
  endif()
endfunction()

# netc_hot_sources(source...): files of a cold target (in the calling
# directory) that run per batch: compiled at the build type's own -O level
# (CMake then compiles each outside the unity chunks).
function(netc_hot_sources)
  set(_options "")
  foreach(_config IN LISTS _netc_optimised_configs)
    string(TOUPPER ${_config} _upper)
    string(REGEX MATCH "-O[23]" _level "${CMAKE_CXX_FLAGS_${_upper}}")
    list(APPEND _options "$<$<CONFIG:${_config}>:${_level}>")
  endforeach()
  if(NETC_COLD_CODE_FLAGS AND _options)
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${_options}")
  endif()
endfunction()
