// OpTables.cpp -- the tables the CUDA backend derives from a Plan at load
// (OpTables.h): transposes by source and sparse edge destinations.
#include "runtime/cuda/OpTables.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc::runtime::cuda {

Expected<TransposedTable> transposeTable(std::span<const int32_t> table, int64_t width, int64_t sources) {
  if (width <= 0 || table.size() % static_cast<size_t>(width) != 0)
    return fail(fmt::format("a table of {} entries is not made of rows of {}", table.size(), width));
  TransposedTable out;
  out.start.assign(static_cast<size_t>(sources) + 1, 0);
  for (size_t i = 0; i < table.size(); ++i) {
    const int32_t s = table[i];
    if (s < -1 || s >= sources)
      return fail(fmt::format("entry {} of a table is {}, outside [-1, {})", i, s, sources));
    if (s >= 0)
      ++out.start[static_cast<size_t>(s) + 1];
  }
  for (size_t s = 0; s < static_cast<size_t>(sources); ++s)
    out.start[s + 1] += out.start[s];
  out.entries.resize(static_cast<size_t>(out.start.back()));
  std::vector<int32_t> next(out.start.begin(), out.start.end() - 1);
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i] >= 0)
      out.entries[static_cast<size_t>(next[static_cast<size_t>(table[i])]++)] = static_cast<int32_t>(i);
  return out;
}

namespace {

const std::vector<int32_t> &tableOf(const plan::Plan &plan, const plan::Op &op, size_t input) {
  return plan.buffers[static_cast<size_t>(op.in[input])].table;
}

Status deriveFor(const plan::Plan &plan, const plan::Op &op, DerivedTables &out) {
  using plan::OpKind;
  auto transpose = [&](TransposedTable &into, size_t input, int64_t width, int64_t sources) -> Status {
    auto t = transposeTable(tableOf(plan, op, input), width, sources);
    if (!t)
      return t.error();
    into = std::move(*t);
    return Status::success();
  };
  switch (op.kind) {
  case OpKind::MaxPoolGrad: {
    const auto &a = op.get<plan::WindowAttrs>();
    return transpose(out.sources, 2, a.window, a.inputs);
  }
  case OpKind::MeanPoolGrad: {
    const auto &a = op.get<plan::WindowAttrs>();
    return transpose(out.sources, 1, a.window, a.inputs);
  }
  case OpKind::ResponseNormGrad: {
    const auto &a = op.get<plan::WindowAttrs>();
    if (Status s = transpose(out.sources, 2, a.window, a.inputs); !s)
      return s;
    return transpose(out.centres, 3, 1, a.inputs);
  }
  case OpKind::ConvolutionGradInput: {
    const auto &a = op.get<plan::ConvAttrs>();
    return transpose(out.sources, 2, a.window, a.inputs);
  }
  case OpKind::SparseGradWeights: {
    const auto &a = op.get<plan::SparseAttrs>();
    const std::vector<int32_t> &rowStart = tableOf(plan, op, 2);
    if (rowStart.size() != static_cast<size_t>(a.outputs) + 1 || rowStart.back() != a.edges)
      return fail(fmt::format("its CSR row starts do not describe {} edges", a.edges));
    out.destinations.resize(static_cast<size_t>(a.edges));
    for (int64_t d = 0; d < a.outputs; ++d)
      for (int32_t e = rowStart[static_cast<size_t>(d)]; e < rowStart[static_cast<size_t>(d) + 1]; ++e)
        out.destinations[static_cast<size_t>(e)] = static_cast<int32_t>(d);
    return Status::success();
  }
  default: return Status::success();
  }
}

} // namespace

Expected<std::vector<DerivedTables>> deriveTables(const plan::Plan &plan) {
  std::vector<DerivedTables> out(plan.ops.size());
  for (size_t i = 0; i < plan.ops.size(); ++i)
    if (Status s = deriveFor(plan, plan.ops[i], out[i]); !s)
      return fail(fmt::format("op #{} ({}) of the plan: {}", i, plan::opName(plan.ops[i].kind), s.message()));
  return out;
}

int64_t reductionChunks(int64_t batch, int64_t elements) {
  const int64_t wanted = (batch + kSamplesPerChunk - 1) / kSamplesPerChunk;
  const int64_t room = kMaxReductionScratch / std::max<int64_t>(elements, 1);
  const int64_t chunks = std::max<int64_t>(1, std::min(wanted, room));
  // As many as the samples fill once split evenly.
  const int64_t perChunk = (std::max<int64_t>(batch, 1) + chunks - 1) / chunks;
  return (std::max<int64_t>(batch, 1) + perChunk - 1) / perChunk;
}

int64_t scratchElements(const plan::Op &op, int64_t batch) {
  if (plan::opRole(op.kind) == plan::OpRole::Loss)
    return 2 * batch;
  int64_t elements = 0;
  switch (op.kind) {
  case plan::OpKind::ConvolutionGradWeights: {
    const auto &a = op.get<plan::ConvAttrs>();
    elements = a.maps * a.groups * a.window;
    break;
  }
  case plan::OpKind::ConvolutionGradBias: { // the per-block partial sums, then the chunks' sums of them
    const auto &a = op.get<plan::ConvAttrs>();
    const int64_t kernels = a.maps * a.groups, samples = batch * biasBlocks(a.positions);
    const int64_t chunks = reductionChunks(samples, kernels);
    return plan::alignElements(samples * kernels) + (chunks > 1 ? chunks * kernels : 0);
  }
  case plan::OpKind::SparseGradWeights: elements = op.get<plan::SparseAttrs>().edges; break;
  case plan::OpKind::BiasGrad: elements = op.get<plan::DenseAttrs>().outputs; break;
  default: return 0;
  }
  const int64_t chunks = reductionChunks(batch, elements);
  return chunks > 1 ? chunks * elements : 0;
}

} // namespace netc::runtime::cuda
