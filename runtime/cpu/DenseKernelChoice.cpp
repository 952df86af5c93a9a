// DenseKernelChoice.cpp -- reading the processor's features and the BLAS's
// report, and the pure choice between netc's and OpenBLAS's dense kernels
// (DenseKernelChoice.h).
#include "runtime/cpu/DenseKernelChoice.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

extern "C" char *openblas_get_corename(void);
extern "C" char *openblas_get_config(void);

namespace netc::runtime::cpu {

CpuFeatures cpuFeaturesFromFlags(std::string_view flags) {
  CpuFeatures f;
  const std::pair<std::string_view, bool CpuFeatures::*> names[] = {{"avx", &CpuFeatures::avx},
                                                                    {"avx2", &CpuFeatures::avx2},
                                                                    {"fma", &CpuFeatures::fma},
                                                                    {"bmi2", &CpuFeatures::bmi2},
                                                                    {"avx512f", &CpuFeatures::avx512f},
                                                                    {"avx512bw", &CpuFeatures::avx512bw},
                                                                    {"avx512dq", &CpuFeatures::avx512dq},
                                                                    {"avx512vl", &CpuFeatures::avx512vl},
                                                                    {"avx512_bf16", &CpuFeatures::avx512bf16},
                                                                    {"amx_bf16", &CpuFeatures::amxBf16}};
  size_t at = 0;
  while (at < flags.size()) {
    const size_t end = std::min(flags.find_first_of(" \t\n", at), flags.size());
    const std::string_view word = flags.substr(at, end - at);
    for (const auto &[name, member] : names)
      if (word == name)
        f.*member = true;
    at = end + 1;
  }
  return f;
}

CpuFeatures hostCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.bmi2 = __builtin_cpu_supports("bmi2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.amxBf16 = __builtin_cpu_supports("amx-bf16");
#endif
#endif
  return f;
}

std::string cpuModelFromCpuinfo(std::string_view cpuinfo) {
  for (std::string_view key : {"model name", "Processor", "CPU part"}) {
    size_t at = 0;
    while (at < cpuinfo.size()) {
      size_t end = cpuinfo.find('\n', at);
      if (end == std::string_view::npos)
        end = cpuinfo.size();
      const std::string_view line = cpuinfo.substr(at, end - at);
      at = end + 1;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos)
        continue;
      std::string_view name = line.substr(0, colon);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\t'))
        name.remove_suffix(1);
      if (name != key)
        continue;
      std::string value;
      for (char c : line.substr(colon + 1)) {
        const bool space = c == ' ' || c == '\t';
        if (space && (value.empty() || value.back() == ' '))
          continue;
        value += space ? ' ' : c;
      }
      while (!value.empty() && value.back() == ' ')
        value.pop_back();
      if (!value.empty())
        return value;
    }
  }
  return "";
}

std::string hostCpuModel() {
  // /proc/cpuinfo reads as an empty regular file to stat; the first CPU's
  // block, which names the model, is within its first few KB.
  std::string text;
  if (std::FILE *file = std::fopen("/proc/cpuinfo", "r")) {
    char buffer[16384];
    size_t n = 0;
    while (text.size() < (size_t(64) << 10) && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
      text.append(buffer, n);
    std::fclose(file);
  }
  std::string model = cpuModelFromCpuinfo(text);
#if defined(__x86_64__)
  return model.empty() ? "unknown x86-64" : model;
#elif defined(__aarch64__)
  return model.empty() ? "unknown AArch64" : model;
#else
  return model.empty() ? "unknown processor" : model;
#endif
}

std::string_view bestInstructionSet(const CpuFeatures &cpu) {
  const bool avx2 = cpu.avx2 && cpu.fma && cpu.bmi2;
  if (avx2 && cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl)
    return "avx512";
  return avx2 ? "avx2" : "baseline";
}

BlasReport hostBlas() {
  BlasReport r;
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": its first two words.
  const std::string_view config = openblas_get_config();
  size_t end = config.find(' ');
  end = end == std::string_view::npos ? config.size() : config.find(' ', end + 1);
  r.name = std::string(config.substr(0, std::min(end, config.size())));
  r.core = openblas_get_corename();
  return r;
}

std::string_view blasCoreInstructions(std::string_view core) {
  // OpenBLAS's x86-64 core names (driver/others/dynamic.c), by the widest
  // vectors their single-precision GEMM kernels use.
  static constexpr std::pair<std::string_view, std::string_view> cores[] = {
      {"SkylakeX", "avx512"}, {"Cooperlake", "avx512"}, {"SapphireRapids", "avx512"}, {"Haswell", "avx2"},
      {"Zen", "avx2"},        {"Excavator", "avx2"},    {"Sandybridge", "avx"},       {"Bulldozer", "avx"},
      {"Piledriver", "avx"},  {"Steamroller", "avx"},   {"Prescott", "sse"},          {"Core2", "sse"},
      {"Penryn", "sse"},      {"Dunnington", "sse"},    {"Nehalem", "sse"},           {"Atom", "sse"},
      {"Katmai", "sse"},      {"Coppermine", "sse"},    {"Northwood", "sse"},         {"Banias", "sse"},
      {"Opteron", "sse"},     {"Opteron_SSE3", "sse"},  {"Barcelona", "sse"},         {"Bobcat", "sse"},
      {"Nano", "sse"}};
  for (const auto &[name, level] : cores)
    if (core == name)
      return level;
  return "";
}

namespace {
std::string_view widestVectors(const CpuFeatures &cpu) {
  const std::string_view set = bestInstructionSet(cpu);
  return set == "avx512" ? "AVX-512" : set == "avx2" ? "AVX2" : "";
}
} // namespace

DenseKernelChoice chooseDenseKernel(const CpuFeatures &cpu, std::string_view instructionSet,
                                    const BlasReport &blas, std::string_view requested) {
  DenseKernelChoice choice;
  const bool blasChosen =
      requested == "openblas" || ((requested.empty() || requested == "auto") && instructionSet == "baseline");
  const std::string_view widest = widestVectors(cpu);
  if (blasChosen) {
    choice.kind = DenseKernelKind::Blas;
    choice.label = fmt::format("{} {}", blas.name, blas.core);
    if (!widest.empty() && blasCoreInstructions(blas.core) == "sse")
      choice.warning = fmt::format(
          "dense products run {}'s generic SSE kernels ({}) on a CPU with {}, several times slower than "
          "they could{}",
          blas.name, blas.core, widest,
          requested == "openblas" ? ": leave out --dense-kernel openblas for netc's own kernels"
                                  : ": leave out --cpu-isa baseline (NETC_CPU_ISA) for netc's own kernels");
    return choice;
  }
  choice.kind = DenseKernelKind::Netc;
  choice.label = fmt::format("netc {}", instructionSet);
  if (!widest.empty() && instructionSet == "baseline")
    choice.warning =
        fmt::format("dense products run netc's baseline (SSE2) kernels on a CPU with {}, several "
                    "times slower than they could: leave out --cpu-isa baseline (NETC_CPU_ISA)",
                    widest);
  return choice;
}

std::string bf16Refusal(const CpuFeatures &cpu, std::string_view instructionSet, DenseKernelKind kind) {
  if (!cpu.avx512bf16)
    return fmt::format("--precision bf16: this processor has no AVX512-BF16 instructions (no avx512_bf16 in "
                       "/proc/cpuinfo's flags), which netc's bf16 products need; leave out --precision bf16 "
                       "to train in fp32");
  if (instructionSet != "avx512")
    return fmt::format("--precision bf16 runs on the avx512 kernels, but --cpu-isa (NETC_CPU_ISA) chose {}: "
                       "leave it out, or leave out --precision bf16",
                       instructionSet);
  if (kind == DenseKernelKind::Blas)
    return "--precision bf16 runs on netc's own dense kernels; OpenBLAS has no bf16 products: leave out "
           "--dense-kernel openblas, or leave out --precision bf16";
  return "";
}

} // namespace netc::runtime::cpu
