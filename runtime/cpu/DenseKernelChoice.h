// DenseKernelChoice.h -- which kernels run the dense products on this CPU:
// netc's own (DenseKernels.cpp, one build per instruction set) or OpenBLAS's
// (BlasDenseKernels.cpp), chosen by a pure function of the processor's
// feature bits, the fast table's instruction set and the BLAS's report of
// itself, so that the choice is tested on recorded machines
// (tests/unit/DenseKernelChoiceTest.cpp), and the run header names it.
#pragma once

#include <string>
#include <string_view>

namespace netc::runtime::cpu {

/// The vector features of a processor that the kernel choices read.
struct CpuFeatures {
  bool avx = false, avx2 = false, fma = false, bmi2 = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512bf16 = false, amxBf16 = false;
};

/// The features named in a /proc/cpuinfo "flags" line (space-separated).
CpuFeatures cpuFeaturesFromFlags(std::string_view flags);
/// This processor's features (CPUID through the compiler's builtins).
CpuFeatures hostCpuFeatures();

/// The processor's model name in a /proc/cpuinfo text: the first "model
/// name" line's value (x86), else the first "Processor" or "CPU part" one
/// (Arm), spaces trimmed and runs of spaces made one; "" when none.
std::string cpuModelFromCpuinfo(std::string_view cpuinfo);
/// This processor's model name (/proc/cpuinfo; "unknown <architecture>" where
/// it names none), for the cost table's machine description.
std::string hostCpuModel();

/// The best fast-table instruction set `cpu` runs: "avx512", "avx2" or
/// "baseline" (runtime/cpu/CMakeLists.txt builds the tables).
std::string_view bestInstructionSet(const CpuFeatures &cpu);

/// What the BLAS linked into netc says about itself.
struct BlasReport {
  std::string name; // "OpenBLAS 0.3.21"
  std::string core; // the kernels it picked, "Haswell", "SkylakeX", "Prescott", ...
};
BlasReport hostBlas();

/// The widest vector instructions an OpenBLAS core's kernels use: "avx512",
/// "avx2", "avx", "sse" (the generic x86 cores: Prescott, Core2, ...), or ""
/// for a core this table does not know (another architecture's).
std::string_view blasCoreInstructions(std::string_view core);

enum class DenseKernelKind { Netc, Blas };

struct DenseKernelChoice {
  DenseKernelKind kind = DenseKernelKind::Netc;
  std::string label;   // the run header's "dense:" value: "netc avx512", "OpenBLAS 0.3.21 Haswell"
  std::string warning; // non-empty: the products run generic code on a CPU with AVX2 or AVX-512
};

/// The dense kernels for `requested` ("auto" or empty, "netc", "openblas")
/// on a processor with `cpu`'s features whose fast table is
/// `instructionSet`. Auto: netc's own wherever it has vector kernels (avx512,
/// avx2); OpenBLAS on the baseline table (processors without AVX2, other
/// architectures), where OpenBLAS has kernels written for the processor.
DenseKernelChoice chooseDenseKernel(const CpuFeatures &cpu, std::string_view instructionSet,
                                    const BlasReport &blas, std::string_view requested);

/// Why `--precision bf16` cannot run on a processor with `cpu`'s features,
/// fast table `instructionSet` and dense kernels `kind` (a message naming
/// the flag to change), or "" when it can: its products need AVX512-BF16,
/// the avx512 table and netc's own dense kernels.
std::string bf16Refusal(const CpuFeatures &cpu, std::string_view instructionSet, DenseKernelKind kind);

} // namespace netc::runtime::cpu
