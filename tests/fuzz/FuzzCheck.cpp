// FuzzCheck.cpp -- the libFuzzer target (netc_fuzz_check, built with
// -DNETC_FUZZ=ON and clang; scripts/fuzz.sh runs it): arbitrary bytes go
// through the same pipeline and invariants as the mutation test
// (FuzzPipeline.h). A broken invariant aborts, so libFuzzer saves the input
// as a crash; the first byte of longer inputs also varies the compile options.
#include "tests/fuzz/FuzzPipeline.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  // Inputs that start with '\x01' use the byte after it to pick the options,
  // which keeps the seed corpus (plain .net files) on the default options.
  uint64_t selector = 0;
  if (text.size() >= 2 && text[0] == '\x01') {
    selector = static_cast<unsigned char>(text[1]);
    text.remove_prefix(2);
  }
  if (auto failure = netc::fuzz::checkPipeline(text, netc::fuzz::fuzzOptions(selector))) {
    std::fprintf(stderr, "netc_fuzz_check: invariant broken (options %llu): %s\n",
                 static_cast<unsigned long long>(selector), failure->c_str());
    std::abort();
  }
  return 0;
}
