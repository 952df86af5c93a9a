// Kernels.h -- the CPU implementations of every Plan op (codegen/Ops.def):
// a fast one (register-tiled loops per instruction set, OpenBLAS for the
// dense products where chosen, OpenMP across the batch) and a naive reference one computing in double,
// which the numeric tests compare the fast kernels against. Both tables are
// derived from Ops.def, so every op has both.
#pragma once

#include "codegen/Plan.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace netc::runtime::cpu {

/// One op to run: its description, the batch size, the buffers' memory
/// (indexed by buffer id) and their layout, and the backend's workspace
/// (sized at load by workspaceBytes: kernels never allocate).
///
/// Layout of the batch-scaled buffers: the fast table keeps them feature-major
/// (`lanes` > 0: sample b's feature i at i·lanes + b, where lanes is the loaded
/// batch rounded up to kLaneChunk), so every kernel works on runs of the batch
/// that vectorise, whatever the bundle's connectivity; the reference table
/// keeps them sample-major (`lanes` == 0: b·n + i). Columns [batch, lanes) are
/// padding: kernels may compute on them but never let them reach a real column.
struct KernelCall {
  const plan::Op &op;
  int64_t batch = 0;
  void *const *buffers = nullptr;
  int64_t lanes = 0;
  void *workspace = nullptr;
  /// Threads of every parallel region: the workspace holds per-thread scratch
  /// for exactly this many (OpenMP's own count is per calling thread).
  int threads = 1;
  /// The plan's next op, fused into this one (CpuBackend): the activation
  /// of a convolution's output, which the convolution applies to each row
  /// as it writes it (activateRows), or the kernel-bias gradient of a
  /// convolution's weight gradient, summed from the output-gradient rows the
  /// weight gradient reads; null: none.
  const plan::Op *then = nullptr;

  /// Where sample b's feature i lies in a batch-scaled buffer of n features per sample.
  [[gnu::always_inline]] int64_t at(int64_t b, int64_t i, int64_t n) const {
    return lanes ? i * lanes + b : b * n + i;
  }

  [[gnu::always_inline]] float *f(int buffer) const { return static_cast<float *>(buffers[buffer]); }
  [[gnu::always_inline]] const int32_t *table(int buffer) const {
    return static_cast<const int32_t *>(buffers[buffer]);
  }
  [[gnu::always_inline]] const float *in(size_t i) const { return f(op.in[i]); }
  [[gnu::always_inline]] const int32_t *inTable(size_t i) const { return table(op.in[i]); }
  [[gnu::always_inline]] float *out(size_t i = 0) const { return f(op.out[i]); }
  /// An update op's optimizer state arrays (out[1..]), null where absent.
  void optimizerState(float *(&state)[plan::kMaxStateSlots]) const {
    for (size_t s = 0; s < plan::kMaxStateSlots; ++s)
      state[s] = s + 1 < op.out.size() ? out(s + 1) : nullptr;
  }
  /// Step scalar `which` (codegen/UpdateRule.h) of an op that reads them.
  float scalar(size_t input, plan::StepScalar which) const { return in(input)[static_cast<int>(which)]; }
};

/// The fast update op splits its arenas over the threads only when each gets
/// at least this many elements: below it the parallel region costs more than
/// the loop.
constexpr int64_t kMinUpdatePerThread = 4096;

using Kernel = void (*)(const KernelCall &);

/// The fast kernels work on chunks of this many batch columns (one 512-bit
/// vector); the feature-major stride is a multiple of it.
constexpr int64_t kLaneChunk = 16;

/// The fast weight gradient of a dense op transposes its inputs this many
/// at a time into each thread's workspace (DenseKernels.cpp).
constexpr int64_t kDenseGradPanel = 128;

/// The fast table, compiled once per instruction set (CMakeLists.txt defines
/// NETC_FAST_NAMESPACE) into namespace fast_<set>; the backend runs the best
/// one the processor supports (instructionSets()).
/// Besides the ops, each has the layout conversions for whole samples:
/// toFeatureMajor copies `samples` rows of n values (sample-major) into
/// columns [first, first + samples) of n rows of `lanes`; fromFeatureMajor
/// copies them back.
// Every op but the communication ops (the backend runs those itself, with
// its communicator): NETC_KERNEL_<Role>(X) is X for the roles with kernels.
#define NETC_KERNEL_Forward(...) __VA_ARGS__
#define NETC_KERNEL_Loss(...) __VA_ARGS__
#define NETC_KERNEL_Backward(...) __VA_ARGS__
#define NETC_KERNEL_Update(...) __VA_ARGS__
#define NETC_KERNEL_Communication(...)
/// The number of ops with kernels: the communication ops come last in Ops.def.
inline constexpr int kKernelOpCount = 0
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(+1)
#include "codegen/Ops.def"
#undef OP
    ;
static_assert(kKernelOpCount == static_cast<int>(plan::OpKind::AllReduce),
              "the communication ops come last in Ops.def, after every op with a kernel");
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(void Id(const KernelCall &call);)
#define NETC_LAYOUT_FUNCTIONS                                                                                \
  void toFeatureMajor(const float *samples, int64_t count, int64_t n, float *rows, int64_t lanes,            \
                      int64_t first);                                                                        \
  void fromFeatureMajor(const float *rows, int64_t lanes, int64_t first, int64_t count, int64_t n,           \
                        float *samples);                                                                     \
  float fmaProbe(int64_t steps, float scale);                                                                \
  int fmaProbeChains();                                                                                      \
  void activateRows(const KernelCall &activation, int64_t row, int64_t rows);
namespace fast_baseline {
#include "codegen/Ops.def"
NETC_LAYOUT_FUNCTIONS
} // namespace fast_baseline
#if defined(__x86_64__)
namespace fast_avx2 {
#include "codegen/Ops.def"
NETC_LAYOUT_FUNCTIONS
} // namespace fast_avx2
namespace fast_avx512 {
#include "codegen/Ops.def"
NETC_LAYOUT_FUNCTIONS
} // namespace fast_avx512
#endif
#undef NETC_LAYOUT_FUNCTIONS
#undef OP

namespace reference {
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(void Id(const KernelCall &call);)
#include "codegen/Ops.def"
#undef OP
} // namespace reference

/// The dense products through OpenBLAS (BlasDenseKernels.cpp), which the
/// fast tables' own (DenseKernels.cpp) give way to where the dense kernel
/// choice picks OpenBLAS (DenseKernelChoice.h).
namespace blas {
void Dense(const KernelCall &call);
void DenseGradWeights(const KernelCall &call);
void DenseGradInput(const KernelCall &call);
} // namespace blas

#if defined(__x86_64__)
/// The products of `--precision bf16`, built for AVX-512 with AVX512-BF16:
/// the dense ones (Bf16DenseKernels.cpp) and the convolutions
/// (Bf16ConvolutionKernels.cpp), both factors rounded to bfloat16, the sums
/// in FP32. The backend runs them in place of the fast table's own only
/// where bf16Refusal (DenseKernelChoice.h) finds nothing against it.
namespace bf16 {
void Dense(const KernelCall &call);
void DenseGradWeights(const KernelCall &call);
void DenseGradInput(const KernelCall &call);
void Convolution(const KernelCall &call);
void ConvolutionGradWeights(const KernelCall &call);
void ConvolutionGradInput(const KernelCall &call);
/// The workspace the bf16 kernel of `op` needs (its packed factors) at
/// feature-major row length `lanes` on `threads` threads; 0 for the other
/// ops. convolutionWorkspaceBytes: the same for the convolutions alone.
size_t workspaceBytes(const plan::Op &op, int64_t lanes, int threads);
size_t convolutionWorkspaceBytes(const plan::Op &op, int64_t lanes, int threads);
/// The ops these kernels replace: what --precision bf16 rounds, held to
/// the bf16 peak in `netc bench --profile`'s roofline.
inline constexpr plan::OpKind kProductKinds[] = {
    plan::OpKind::Dense,       plan::OpKind::DenseGradWeights,       plan::OpKind::DenseGradInput,
    plan::OpKind::Convolution, plan::OpKind::ConvolutionGradWeights, plan::OpKind::ConvolutionGradInput};
/// The peak probe of these products: `steps` rounds of productProbeChains()
/// independent VDPBF16PS, each 16 lanes of two multiply-adds (the kernels'
/// register tile); returns their sum (so none is dropped).
float productProbe(int64_t steps);
int productProbeChains();
} // namespace bf16
#endif

/// x rounded to bfloat16 and back, as VCVTNEPS2BF16 rounds: to nearest,
/// ties to even; denormals become a zero of their sign; a NaN stays a
/// (quiet) NaN; values past the largest bf16 round to infinity.
float roundToBf16(float x);

namespace reference {
/// The bf16 reference (`--backend cpu-reference --precision bf16`): the
/// reference dense and convolution products with both factors of every
/// product through roundToBf16, summed in double.
void Bf16Dense(const KernelCall &call);
void Bf16DenseGradWeights(const KernelCall &call);
void Bf16DenseGradInput(const KernelCall &call);
void Bf16Convolution(const KernelCall &call);
void Bf16ConvolutionGradWeights(const KernelCall &call);
void Bf16ConvolutionGradInput(const KernelCall &call);
} // namespace reference

/// The instruction sets the fast table was built for that this processor
/// runs, best first ("avx512", "avx2", "baseline").
std::vector<std::string_view> instructionSets();
/// Every instruction set the fast table was built for, whether or not this
/// processor runs it, best first (what --cpu-isa may name).
std::vector<std::string_view> knownInstructionSets();

/// One kernel table: a kernel per op with kernels (indexed by plan::OpKind) and, for the
/// feature-major fast tables, the layout conversions (null for the reference).
struct KernelTable {
  std::string_view name;
  const Kernel *kernels = nullptr;
  void (*toFeatureMajor)(const float *, int64_t, int64_t, float *, int64_t, int64_t) = nullptr;
  void (*fromFeatureMajor)(const float *, int64_t, int64_t, int64_t, int64_t, float *) = nullptr;
  /// The multiply-add peak probe (fast tables only): `steps` rounds of
  /// fmaProbeChains() independent lane vectors of multiply-adds, the
  /// dense products' register tile; returns their sum (so none is dropped).
  float (*fmaProbe)(int64_t steps, float scale) = nullptr;
  int (*fmaProbeChains)() = nullptr;
};

/// The fast table for `instructionSet` (empty: the best supported), or null
/// when it is unknown or this processor lacks it.
const KernelTable *fastTable(std::string_view instructionSet);
const KernelTable *referenceTable();

/// The workspace bytes op `op` needs from the fast table (`lanes` > 0, the
/// feature-major row length) or the reference table (`lanes` == 0) on
/// `threads` threads.
size_t workspaceBytes(const plan::Op &op, int64_t lanes, int threads);

/// The number of threads the fast loops use (OpenMP) and OpenBLAS uses.
void setThreadCount(int threads);
int threadCount();

} // namespace netc::runtime::cpu
