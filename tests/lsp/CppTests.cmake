# CppTests.cmake -- the language server's C++ tests (GoogleTest, in-process):
# transport framing, UTF-16 positions and edits, lifecycle and protocol
# errors, debounced diagnostics, and the seeded random-edit session.
find_package(GTest REQUIRED)
include(GoogleTest)
add_executable(netc_lsp_tests RandomEditTest.cpp ServerTest.cpp TransportTest.cpp)
netc_component(netc_lsp_tests)
target_link_libraries(netc_lsp_tests PRIVATE netc_lsp GTest::gtest_main)
target_compile_definitions(netc_lsp_tests PRIVATE NETC_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(netc_lsp_tests PROPERTIES LABELS lsp DISCOVERY_TIMEOUT 60)
