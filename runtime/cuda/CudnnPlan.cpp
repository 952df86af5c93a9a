// CudnnPlan.cpp -- the cuDNN side of a loaded plan (CudnnPlan.h).
#include "runtime/cuda/CudnnPlan.h"
#include "runtime/cuda/CudnnAlgorithms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace netc::runtime::cuda {

namespace {

/// The window table of pooling op `op` (cudnnPools).
const std::vector<int32_t> &poolWindow(const plan::Plan &plan, const plan::Op &op) {
  return plan.buffers[static_cast<size_t>(op.in[op.kind == plan::OpKind::MaxPoolGrad ? 2 : 1])].table;
}

} // namespace

Status CudnnPlan::prepare(const plan::Plan &plan, int64_t maxBatch, cudaStream_t stream,
                          const CudaDevice &device, Precision precision, bool useCudnn) {
  release();
  plan_ = &plan;
  maxBatch_ = maxBatch;
  convolutions_.assign(plan.ops.size(), {});
  pools_.assign(plan.ops.size(), {});
  int convolutions = 0, pools = 0;
  std::vector<size_t> described, pooled;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    if (cudnnPools(op.kind)) {
      ++pools;
      if (!useCudnn)
        continue;
      if (auto shapes = describePoolingForCudnn(op.get<plan::WindowAttrs>(), poolWindow(plan, op),
                                                op.kind != plan::OpKind::MeanPool, maxBatch)) {
        pools_[i].shapes = *shapes;
        pooled.push_back(i);
      }
      continue;
    }
    if (!cudnnRuns(op.kind))
      continue;
    ++convolutions;
    if (!useCudnn)
      continue;
    auto table = [&](size_t k) -> const std::vector<int32_t> & {
      return plan.buffers[static_cast<size_t>(op.in[k])].table;
    };
    auto description = describeForCudnn(op.get<plan::ConvAttrs>(), table(2), table(3));
    if (!description)
      continue;
    auto shapes = cudnnShapes(*description, maxBatch);
    if (!shapes)
      continue;
    convolutions_[i].description = std::move(*description);
    convolutions_[i].shapes = *shapes;
    described.push_back(i);
  }
  if (described.empty() && pooled.empty()) {
    if (convolutions + pools > 0)
      note_ = fmt::format(", no op on cuDNN{}", useCudnn ? "" : " (no-cudnn)");
    return Status::success();
  }
  auto library = Cudnn::open(stream);
  if (!library)
    return library.error();
  cudnn_ = std::move(*library);
  const std::string cachePath =
      algorithmCachePath(std::getenv("NETC_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  AlgorithmCache cache = readAlgorithmCache(cachePath);
  const std::string key = fmt::format("{} sm{}{} cudnn{} {}", device.name, device.major, device.minor,
                                      cudnn_->version(), precision == Precision::Tf32 ? "tf32" : "fp32");
  int onCudnn = 0, measured = 0;
  for (size_t i : described) {
    Convolution &c = convolutions_[i];
    const plan::OpKind kind = plan.ops[i].kind;
    const CudnnPass pass = kind == plan::OpKind::Convolution            ? CudnnPass::Forward
                           : kind == plan::OpKind::ConvolutionGradInput ? CudnnPass::BackwardData
                                                                        : CudnnPass::BackwardFilter;
    auto slot = cudnn_->prepare(pass, c.shapes, precision,
                                fmt::format("{} {} {}", passName(pass), key, shapeKey(c.shapes)), cache);
    if (!slot)
      continue; // netc's kernels compute it
    c.slot = *slot;
    workspaceBytes_ = std::max(workspaceBytes_, cudnn_->workspaceBytes(*slot));
    ++onCudnn;
    measured += cudnn_->measured(*slot) ? 1 : 0;
  }
  // A cache that cannot be written costs a measurement next time, nothing more.
  if (cache.changed && !cachePath.empty())
    static_cast<void>(writeAlgorithmCache(cachePath, cache));
  int poolsOnCudnn = 0;
  for (size_t i : pooled)
    if (auto slot = cudnn_->preparePooling(pools_[i].shapes)) {
      pools_[i].slot = *slot;
      ++poolsOnCudnn;
    }
  note_ = fmt::format(", cuDNN {} for {} of {} convolution ops ({} algorithms measured, {} cached)",
                      cudnn_->version(), onCudnn, convolutions, measured, onCudnn - measured);
  if (pools > 0)
    note_ += fmt::format(" and {} of {} pooling ops", poolsOnCudnn, pools);
  return Status::success();
}

int64_t CudnnPlan::placeTables(const std::function<int64_t(const std::vector<int32_t> &)> &place) {
  int64_t scratch = 0;
  for (Convolution &c : convolutions_) {
    if (c.slot < 0)
      continue;
    c.netChannelOffset = c.shapes.outputInPlace ? -1 : place(c.description.netChannel);
    c.weightRowOffset = c.shapes.weightsInPlace ? -1 : place(c.description.weightRow);
    const int64_t filter = c.shapes.weightsInPlace ? 0 : plan::alignElements(c.shapes.filterFloats);
    const int64_t values =
        c.shapes.outputInPlace ? 0 : maxBatch_ * c.shapes.channels * c.shapes.channelLength;
    scratch = std::max(scratch, filter + values);
  }
  for (size_t i = 0; i < pools_.size(); ++i) // a max-pool gradient's forward output
    if (pools_[i].slot >= 0 && plan_->ops[i].kind == plan::OpKind::MaxPoolGrad)
      scratch = std::max(scratch, maxBatch_ * pools_[i].shapes.outputs);
  return scratch;
}

Status
CudnnPlan::uploadTables(const std::function<Status(int64_t, const std::vector<int32_t> &)> &upload) const {
  for (const Convolution &c : convolutions_)
    for (auto [offset, table] : {std::pair{c.netChannelOffset, &c.description.netChannel},
                                 {c.weightRowOffset, &c.description.weightRow}})
      if (offset >= 0)
        if (Status s = upload(offset, *table); !s)
          return s;
  return Status::success();
}

void CudnnPlan::setBlock(float *block, float *scratch, void *workspace) {
  block_ = block;
  scratch_ = scratch;
  if (cudnn_)
    cudnn_->setWorkspace(workspace, workspaceBytes_);
}

std::optional<CudnnOpResources> CudnnPlan::convolution(size_t op, int64_t batch) {
  if (op >= convolutions_.size() || convolutions_[op].slot < 0)
    return std::nullopt;
  Convolution &c = convolutions_[op];
  CudnnOpResources r;
  r.shapes = c.shapes;
  if (batch != maxBatch_) { // a partial batch: the same call on fewer samples (which always has a form)
    if (c.partialBatch != batch)
      if (auto shapes = cudnnShapes(c.description, batch)) {
        c.partial = *shapes;
        c.partialBatch = batch;
      }
    r.shapes = c.partial;
  }
  r.netChannel = intsAt(c.netChannelOffset);
  r.weightRow = intsAt(c.weightRowOffset);
  r.filter = scratch_;
  r.values = r.filter + (c.shapes.weightsInPlace ? 0 : plan::alignElements(c.shapes.filterFloats));
  r.slot = c.slot;
  return r;
}

std::optional<CudnnPoolResources> CudnnPlan::pooling(size_t op, int64_t batch) {
  if (op >= pools_.size() || pools_[op].slot < 0)
    return std::nullopt;
  Pool &c = pools_[op];
  CudnnPoolResources r;
  r.shapes = c.shapes;
  if (batch != maxBatch_) {
    if (c.partialBatch != batch) {
      const plan::Op &o = plan_->ops[op];
      if (auto shapes = describePoolingForCudnn(o.get<plan::WindowAttrs>(), poolWindow(*plan_, o),
                                                c.shapes.max, batch)) {
        c.partial = *shapes;
        c.partialBatch = batch;
      }
    }
    r.shapes = c.partial;
  }
  r.values = scratch_;
  r.slot = c.slot;
  return r;
}

void CudnnPlan::release() {
  cudnn_.reset();
  convolutions_.clear();
  pools_.clear();
  note_.clear();
  workspaceBytes_ = 0;
  block_ = scratch_ = nullptr;
}

} // namespace netc::runtime::cuda
