// PlanHarness.h -- helpers shared by the numeric tests of compiled plans:
// compile Net# text (or an example file) to checked IR and a training Plan,
// load the Plan on a CPU backend (fast or reference), fill parameters,
// features and labels from a seeded std::mt19937, snapshot and restore every
// float buffer, and compare buffers with a relative tolerance plus an
// absolute floor scaled to the buffer. Header-only; used by the parity,
// gradient-check, index-table, example-step and memory-planning tests.
#pragma once

#include "api/Driver.h"
#include "codegen/Codegen.h"
#include "runtime/cpu/CpuBackend.h"
#include "runtime/cpu/DenseKernelChoice.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/optim/Optimizer.h"
#include "tests/SourceFiles.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace netc::numeric {

using testfiles::exampleNames;
using testfiles::exampleTestName;
using testfiles::readFile;
using testfiles::sourcePath;

/// Every diagnostic of a compilation as "code line:col message" lines.
inline std::string describeDiagnostics(const Compilation &c) {
  std::string out;
  for (const Diagnostic &d : c.diags.diagnostics()) {
    LineColumn at = c.file.lineColumn(d.range.begin);
    out += fmt::format("  {} {}:{} {}\n", d.code(), at.line, at.column, d.message);
  }
  return out;
}

/// A compiled network and (once built) its plan. The Compilation owns the
/// source the IR's ranges point into, so it lives as long as the plan.
struct Compiled {
  std::unique_ptr<Compilation> compilation;
  plan::Plan plan;
  const ir::Network &network() const { return compilation->network; }
};

/// Compiles `text` through every pass; fails the test on any error.
inline std::unique_ptr<Compilation> compileText(std::string_view text, const CompileOptions &options = {},
                                                std::string name = "t.net") {
  auto c = compileSource(SourceFile(std::move(name), std::string(text)), options, Stage::Passes);
  EXPECT_EQ(c->diags.errorCount(), 0u) << describeDiagnostics(*c) << "in:\n" << text;
  return c;
}

/// Compiles `text` and builds its plan (training by default, no memory
/// reuse unless asked, so every buffer still holds its value after a run).
inline Compiled compileAndPlan(std::string_view text, const CompileOptions &options = {},
                               plan::PlanOptions planOptions = {true, {}, false}) {
  Compiled out;
  out.compilation = compileText(text, options);
  if (out.compilation->diags.errorCount() != 0)
    return out;
  auto p = plan::buildPlan(out.compilation->network, planOptions);
  EXPECT_TRUE(p.ok()) << (p.ok() ? std::string() : p.message());
  if (p.ok())
    out.plan = std::move(*p);
  return out;
}

/// Elements of `buffer` for a batch of `batch` samples.
inline size_t elementsOf(const plan::Buffer &buffer, int64_t batch) {
  return static_cast<size_t>(buffer.batchScaled() ? buffer.perSample * batch : buffer.fixed);
}

/// Whether the tests treat `buffer` as float data to copy and compare
/// (tables are int32; a whole flat arena is copied through its views, the
/// workspace is scratch).
inline bool isFloatData(const plan::Buffer &buffer) {
  switch (buffer.role) {
  case plan::BufferRole::ParameterArena:
  case plan::BufferRole::GradientArena:
  case plan::BufferRole::StateArena:
  case plan::BufferRole::Workspace: return false;
  default: return buffer.type == plan::ElementType::F32;
  }
}

/// Every float buffer's contents, by buffer index (empty for the others).
using State = std::vector<std::vector<float>>;

/// Which CPU backend a Machine runs: threads, the reference kernels or the
/// fast ones, and for those the instruction set (empty: $NETC_CPU_ISA, which
/// scripts/test.sh's second pass sets to baseline, else the best).
struct MachineKind {
  int threads = 1;
  bool reference = false;
  std::string variant;
  std::string denseKernel = {}; // BackendOptions::denseKernel: "" (auto), "netc", "openblas"
  bool bf16 = false;            // BackendOptions::bf16Products (--precision bf16)
};

inline runtime::BackendOptions backendOptionsOf(const MachineKind &kind);

/// A parameterised test's name: its case's own (`name` is GoogleTest-safe).
template <typename Case> std::string netCaseName(const ::testing::TestParamInfo<Case> &info) {
  return info.param.name;
}

/// The instruction set of a MachineKind that names none.
inline std::string instructionSetOf(const MachineKind &kind) {
  if (!kind.variant.empty())
    return kind.variant;
  const char *fromEnvironment = std::getenv("NETC_CPU_ISA");
  return fromEnvironment ? fromEnvironment : "";
}

inline runtime::BackendOptions backendOptionsOf(const MachineKind &kind) {
  runtime::BackendOptions options{kind.threads, 0, instructionSetOf(kind), kind.denseKernel};
  options.bf16Products = kind.bf16;
  return options;
}

/// A plan loaded on one CPU backend with a fixed batch.
class Machine {
public:
  Machine(const plan::Plan &plan, int64_t batch, const MachineKind &kind)
      : plan_(&plan), batch_(batch),
        backend_(runtime::makeCpuBackend(backendOptionsOf(kind), kind.reference)) {
    Status s = backend_->load(plan, batch);
    EXPECT_TRUE(s.ok()) << s.message();
  }

  const plan::Plan &plan() const { return *plan_; }
  int64_t batch() const { return batch_; }
  runtime::Backend &backend() { return *backend_; }

  std::vector<float> read(int buffer) const {
    std::vector<float> out(elementsOf(plan_->buffers[static_cast<size_t>(buffer)], batch_));
    backend_->read(buffer, out);
    return out;
  }
  void write(int buffer, const std::vector<float> &values) {
    EXPECT_EQ(values.size(), elementsOf(plan_->buffers[static_cast<size_t>(buffer)], batch_));
    backend_->write(buffer, values);
  }

  State snapshot() const {
    State state(plan_->buffers.size());
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (isFloatData(plan_->buffers[b]))
        state[b] = read(static_cast<int>(b));
    return state;
  }
  void restore(const State &state) {
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (isFloatData(plan_->buffers[b]) && !state[b].empty())
        write(static_cast<int>(b), state[b]);
  }

  /// Runs ops [first, last) as one training step `step` at `learningRate`
  /// (the step scalars written first, the metrics sums cleared).
  void run(size_t first, size_t last, float learningRate = 0.1f, int64_t step = 1) {
    plan::UpdateRule rule;
    for (const plan::Op &op : plan_->ops)
      if (op.kind == plan::OpKind::Update)
        rule = op.get<plan::UpdateAttrs>().rule;
    const auto scalars = optim::stepScalars(rule, learningRate, step, batch_, batch_);
    backend_->write(plan_->scalars, scalars);
    backend_->write(plan_->metrics, std::vector<float>(plan::kMetricCount, 0.0f));
    if (Status ran = backend_->run(first, last, batch_); !ran)
      ADD_FAILURE() << ran.message();
    backend_->synchronize();
  }

  /// The mean loss of the last batch (D16: the metrics hold the loss sum).
  double meanLoss() const { return double(read(plan_->metrics)[0]) / double(batch_); }

private:
  const plan::Plan *plan_;
  int64_t batch_;
  std::unique_ptr<runtime::Backend> backend_;
};

/// How the random initial state is drawn.
struct FillOptions {
  double weightScale = 1.5;  // weights uniform in ±weightScale/sqrt(fanIn)
  double biasScale = 0.3;    // biases uniform in ±biasScale
  double featureScale = 1.0; // features uniform in ±featureScale
};

/// A random initial state for `plan` (parameters, features, labels; every
/// other float buffer zero) from `seed`. Labels are class indices for several
/// output nodes, 0/1 for one sigmoid node, a real target for one other node.
inline State randomState(const plan::Plan &plan, int64_t batch, uint32_t seed, const FillOptions &fill = {}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  State state(plan.buffers.size());
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (isFloatData(plan.buffers[b]))
      state[b].assign(elementsOf(plan.buffers[b], batch), 0.0f);
  for (const plan::Parameter &p : plan.parameters) {
    std::vector<float> &values = state[static_cast<size_t>(p.buffer)];
    const double scale = p.isBias ? fill.biasScale : fill.weightScale / std::sqrt(double(p.fanIn));
    for (float &v : values)
      v = static_cast<float>(scale * unit(rng));
  }
  for (float &v : state[static_cast<size_t>(plan.features)])
    v = static_cast<float>(fill.featureScale * unit(rng));
  std::vector<float> &labels = state[static_cast<size_t>(plan.labels)];
  for (float &v : labels) {
    if (plan.outputNodes > 1)
      v = static_cast<float>(std::uniform_int_distribution<int64_t>(0, plan.outputNodes - 1)(rng));
    else if (plan.loss == plan::LossKind::BinaryCrossEntropy)
      v = static_cast<float>(std::uniform_int_distribution<int>(0, 1)(rng));
    else
      v = static_cast<float>(unit(rng));
  }
  return state;
}

/// Closeness of two float vectors: |a − r| ≤ relative·|r| + absolute·scale
/// for every element, where scale = max(1e-3, max |r|) over the vector (an
/// absolute floor relative to the buffer's magnitude, so values that cancel
/// to near zero are judged against the size of what was summed). On failure
/// the message names the buffer and its worst elements.
struct Tolerance {
  double relative = 1e-4;
  double absolute = 1e-5;
};

struct Comparison {
  double worstRatio = 0; // max |a − r| / (relative·|r| + absolute·scale); ≤ 1 passes
  double maxAbsError = 0, maxRelError = 0;
  size_t worstIndex = 0;
  size_t mismatches = 0;
};

inline Comparison compareValues(const std::vector<float> &actual, const std::vector<float> &reference,
                                Tolerance tol) {
  Comparison c;
  double scale = 1e-3;
  for (float r : reference)
    scale = std::max(scale, double(std::abs(r)));
  for (size_t i = 0; i < reference.size() && i < actual.size(); ++i) {
    const double a = actual[i], r = reference[i];
    const double err = std::abs(a - r);
    if (!std::isfinite(a) || !std::isfinite(r)) {
      if (!(std::isnan(a) && std::isnan(r)) && a != r) {
        ++c.mismatches;
        c.worstRatio = INFINITY;
        c.worstIndex = i;
      }
      continue;
    }
    const double ratio = err / (tol.relative * std::abs(r) + tol.absolute * scale);
    c.maxAbsError = std::max(c.maxAbsError, err);
    if (r != 0)
      c.maxRelError = std::max(c.maxRelError, err / std::abs(r));
    if (ratio > 1)
      ++c.mismatches;
    if (ratio > c.worstRatio) {
      c.worstRatio = ratio;
      c.worstIndex = i;
    }
  }
  return c;
}

inline ::testing::AssertionResult valuesClose(std::string_view what, const std::vector<float> &actual,
                                              const std::vector<float> &reference, Tolerance tol = {}) {
  if (actual.size() != reference.size())
    return ::testing::AssertionFailure()
           << what << ": sizes differ (" << actual.size() << " vs " << reference.size() << ")";
  Comparison c = compareValues(actual, reference, tol);
  if (c.mismatches == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << fmt::format(
             "{}: {} of {} elements differ; worst [{}] = {} vs reference {} (max abs error {:.3g}, "
             "max rel error {:.3g})",
             what, c.mismatches, reference.size(), c.worstIndex, actual[c.worstIndex],
             reference[c.worstIndex], c.maxAbsError, c.maxRelError);
}

/// Bitwise equality of two float vectors (NaNs with the same bits are equal).
inline ::testing::AssertionResult bitIdentical(std::string_view what, const std::vector<float> &a,
                                               const std::vector<float> &b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << what << ": sizes differ";
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0)
    return ::testing::AssertionSuccess();
  size_t differing = 0, first = a.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      ++differing;
      first = std::min(first, i);
    }
  return ::testing::AssertionFailure()
         << fmt::format("{}: {} of {} elements differ in their bits; first [{}] "
                        "= {} vs {}",
                        what, differing, a.size(), first, a[first], b[first]);
}

/// The op's description for failure messages: "#12 dense-grad-input (H2)".
inline std::string describeOp(const plan::Plan &plan, size_t index) {
  const plan::Op &op = plan.ops[index];
  std::string out = fmt::format("#{} {}", index, plan::opName(op.kind));
  if (!op.out.empty())
    out += fmt::format(" -> {}", plan.buffers[static_cast<size_t>(op.out[0])].name);
  return out;
}

/// Whether op `kind` calls OpenBLAS (whose blocking may depend on the
/// thread count) on a fast machine of `kind`: the dense products, where the
/// dense kernel choice picks OpenBLAS for that instruction set.
inline bool usesBlas(plan::OpKind op, const MachineKind &kind) {
  if (op != plan::OpKind::Dense && op != plan::OpKind::DenseGradWeights && op != plan::OpKind::DenseGradInput)
    return false;
  std::string set = instructionSetOf(kind);
  if (set.empty())
    set = runtime::cpu::instructionSets().front();
  return runtime::cpu::chooseDenseKernel(runtime::cpu::hostCpuFeatures(), set, runtime::cpu::hostBlas(),
                                         kind.denseKernel)
             .kind == runtime::cpu::DenseKernelKind::Blas;
}

} // namespace netc::numeric
