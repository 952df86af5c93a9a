# NetcOptions.cmake -- warning and sanitizer settings for netc's own targets.
# netc_component(target) applies -Wall -Wextra (-Werror) and the include root;
# generated code (the ANTLR parser) gets neither.

# NETC_SANITIZERS: the list form of NETC_SANITIZE, also exported with
# netc::netc (api/CMakeLists.txt) and written into netc.pc.
string(REPLACE "," ";" NETC_SANITIZERS "${NETC_SANITIZE}")
if(NETC_SANITIZE)
  foreach(_s IN LISTS NETC_SANITIZERS)
    add_compile_options(-fsanitize=${_s})
    add_link_options(-fsanitize=${_s})
  endforeach()
  add_compile_options(-fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fno-sanitize-recover=all)
  # With -fsanitize=address GCC 12 reports false -Wmaybe-uninitialized
  # positives inside <regex> and <functional>.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()

function(netc_component target)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  # GCC 12 reports false -Wrestrict positives inside std::string at -O3
  # (GCC bug 105329); the warning stays on for other compilers.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(NETC_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
