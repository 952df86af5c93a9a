// embed.cpp -- the embedding example: compiles a Net# network from a string
// with netc's C++ API and prints each layer's shape and parameter count.
#include "netc/netc.h"

#include <cstdio>

int main() {
  const char *source = R"(
    const { T = true; F = false; }
    input Picture [28, 28];
    hidden C1 [5, 12, 12] from Picture convolve {
      InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5;
    }
    hidden H [100] from C1 all;
    output Digit [10] softmax from H all;
  )";
  netc::CompileResult result = netc::compile(source, "embedded.net");
  if (!result.ok()) {
    std::fputs(result.formattedDiagnostics.c_str(), stderr);
    return 1;
  }
  const netc::Network &net = *result.network;
  std::printf("network %s: %lld parameters\n", net.name().c_str(), static_cast<long long>(net.params()));
  for (const netc::LayerInfo &layer : net.layers()) {
    std::printf("  %-8s %-6s [", layer.name.c_str(), layer.kind.c_str());
    for (size_t i = 0; i < layer.shape.size(); ++i)
      std::printf("%s%lld", i ? ", " : "", static_cast<long long>(layer.shape[i]));
    std::printf("] %lld params\n", static_cast<long long>(layer.params));
  }
  return 0;
}
