// fatal_error_guard_test.cpp -- LLVM's fatal errors inside the LLVM plugin
// (codegen/llvm/LlvmPlugin.cpp) come back as a message instead of ending the
// process: the plugin's test entry point reports one through
// llvm::report_fatal_error, which without the guard prints "LLVM ERROR" and
// exits; the call must return false with the reason, twice in a row (the
// handler stays installed), and the process must go on to print "passed".
// Usage: netc_aot_fatal_error_guard_test PLUGIN
#include "codegen/AotLibrary.h"

#include <cstdio>
#include <dlfcn.h>
#include <string>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s libnetc-llvm.so\n", argv[0]);
    return 2;
  }
  void *plugin = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    std::fprintf(stderr, "FAIL: cannot load %s: %s\n", argv[1], ::dlerror());
    return 1;
  }
  using Check = bool (*)(netc::aot::Output *);
  auto check = reinterpret_cast<Check>(::dlsym(plugin, "netc_llvm_check_fatal_error_guard"));
  if (!check) {
    std::fprintf(stderr, "FAIL: the plugin has no netc_llvm_check_fatal_error_guard\n");
    return 1;
  }
  for (int round = 1; round <= 2; ++round) {
    netc::aot::Output output;
#ifdef __SANITIZE_ADDRESS__
    // libLLVM is built without exceptions: the strings its frames held when
    // the error unwound through them are leaked, by design (LlvmPlugin.cpp).
    __lsan_disable();
#endif
    const bool succeeded = check(&output);
#ifdef __SANITIZE_ADDRESS__
    __lsan_enable();
#endif
    if (succeeded) {
      std::fprintf(stderr, "FAIL: round %d: the call reported success\n", round);
      return 1;
    }
    const std::string expected = "LLVM cannot compile this library: netc's check of its fatal-error guard";
    if (output.error != expected) {
      std::fprintf(stderr, "FAIL: round %d: the message is '%s', expected '%s'\n", round,
                   output.error.c_str(), expected.c_str());
      return 1;
    }
  }
  std::printf("fatal_error_guard_test: passed\n");
  return 0;
}
