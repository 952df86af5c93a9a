// StepLaunches.cpp -- the CUDA backend's issue order as data: a launcher
// that records (StepLaunches.h).
#include "runtime/cuda/StepLaunches.h"
#include "runtime/core/MemoryLayout.h"
#include "runtime/cuda/CudnnRunner.h"
#include "runtime/cuda/GemmCall.h"
#include "runtime/cuda/NcclCalls.h"

#include <fmt/format.h>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace netc::runtime::cuda {

namespace {

/// A body's type name without its namespace ("ConvolutionBiasPartialBody").
template <class Body> std::string bodyName() {
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> name(
      abi::__cxa_demangle(typeid(Body).name(), nullptr, nullptr, &status), std::free);
  std::string text = status == 0 && name ? name.get() : typeid(Body).name();
  const size_t colon = text.rfind("::");
  return colon == std::string::npos ? text : text.substr(colon + 2);
}

/// The launcher interface of OpRunner.h and CudnnRunner.h, recording.
struct RecordingLauncher {
  std::vector<StepLaunch> *out = nullptr;
  int op = -1;
  void add(StepLaunch::Kind kind, std::string what, int64_t elements) {
    out->push_back({kind, op, std::move(what), elements});
  }
  template <class Body> void elements(const Body &, int64_t n) {
    if (n > 0)
      add(StepLaunch::Kind::Kernel, bodyName<Body>(), n);
  }
  void gemm(const GemmCall &call) {
    add(StepLaunch::Kind::Gemm,
        fmt::format("cublasSgemm {}{} {}x{}x{}", call.transA ? "T" : "N", call.transB ? "T" : "N", call.m,
                    call.n, call.k),
        call.m * call.n);
  }
  void zero(float *, int64_t n) {
    if (n > 0)
      add(StepLaunch::Kind::Memset, "memset", n);
  }
  void reduceMetrics(const MetricsReduceBody &body) {
    add(StepLaunch::Kind::Metrics, "metrics block", body.batch);
  }
  void cudnn(const CudnnCall &call) {
    add(StepLaunch::Kind::Cudnn, fmt::format("cudnn {} {}", passName(call.pass), shapeKey(*call.shapes)), 0);
  }
  void cudnnPool(const CudnnPoolCall &call) {
    add(StepLaunch::Kind::Cudnn,
        fmt::format("cudnn pooling {} {}", call.backward ? "backward" : "forward",
                    poolShapeKey(*call.shapes)),
        0);
  }
};

} // namespace

Expected<std::vector<StepLaunch>> stepLaunches(const plan::Plan &plan, int64_t batch, size_t first,
                                               size_t last, bool cudnn, bool nccl) {
  if (batch < 1)
    return fail("a batch of at least one sample");
  auto collectives = ncclCollectives(plan, first, last);
  if (!collectives)
    return collectives.error();
  size_t nextCollective = 0;
  // Real host memory behind every pointer the dispatch computes (nothing is run).
  auto layout = layoutMemory(plan, batch);
  if (!layout)
    return layout.error();
  std::vector<float> block(static_cast<size_t>(layout->planElements) + 64), scratch;
  int64_t scratchElements = 0, cudnnScratch = 0;
  std::vector<void *> buffers(plan.buffers.size(), nullptr);
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (layout->offset[b] >= 0)
      buffers[b] = block.data() + layout->offset[b];
  std::vector<std::optional<CudnnConvolution>> convolutions(plan.ops.size());
  std::vector<std::optional<CudnnPoolShapes>> pools(plan.ops.size());
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    scratchElements = std::max(scratchElements, cuda::scratchElements(op, batch));
    auto table = [&](size_t k) -> const std::vector<int32_t> & {
      return plan.buffers[size_t(op.in[k])].table;
    };
    if (!cudnn)
      continue;
    if (cudnnRuns(op.kind))
      convolutions[i] = describeForCudnn(op.get<plan::ConvAttrs>(), table(2), table(3));
    else if (cudnnPools(op.kind))
      pools[i] = describePoolingForCudnn(op.get<plan::WindowAttrs>(),
                                         table(op.kind == plan::OpKind::MaxPoolGrad ? 2 : 1),
                                         op.kind != plan::OpKind::MeanPool, batch);
    if (pools[i])
      cudnnScratch = std::max(cudnnScratch, batch * pools[i]->outputs);
    if (convolutions[i]) {
      auto shapes = cudnnShapes(*convolutions[i], batch);
      if (!shapes)
        convolutions[i].reset();
      else
        cudnnScratch = std::max(cudnnScratch,
                                shapes->filterFloats + 64 + batch * shapes->channels * shapes->channelLength);
    }
  }
  scratch.assign(static_cast<size_t>(scratchElements + cudnnScratch + 64), 0.0f);
  std::vector<StepLaunch> out;
  RecordingLauncher launch{&out};
  launch.add(StepLaunch::Kind::WaitForInput, "wait for the input slot's copy", 0);
  OpResources r;
  r.batch = batch;
  r.buffers = buffers.data();
  r.scratch = scratch.data();
  for (size_t i = first; i < last && i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    launch.op = static_cast<int>(i);
    if (plan::opRole(op.kind) == plan::OpRole::Communication) {
      if (!nccl) {
        launch.add(StepLaunch::Kind::AllReduce, std::string(plan::opName(op.kind)) + " through the host", 0);
        continue;
      }
      const NcclCollective &c = (*collectives)[nextCollective++];
      if (c.kind == NcclCollective::Kind::Join) {
        launch.add(StepLaunch::Kind::Join, "compute stream waits for the all-reduces", 0);
        continue;
      }
      launch.add(StepLaunch::Kind::Collective,
                 fmt::format("ncclAllReduce {} {} [{}, +{}) of {}{}", ncclReductionName(c.reduction),
                             ncclTypeName(c.type), c.offset, c.count, plan.buffers[size_t(c.buffer)].name,
                             c.bucket >= 0 ? fmt::format(" (bucket {})", c.bucket) : std::string()),
                 c.count);
      continue;
    }
    std::optional<CudnnOpResources> conv;
    std::optional<CudnnPoolResources> pool;
    if (convolutions[i]) {
      conv.emplace();
      conv->shapes = *cudnnShapes(*convolutions[i], batch);
      conv->netChannel = convolutions[i]->netChannel.data();
      conv->weightRow = convolutions[i]->weightRow.data();
      conv->filter = scratch.data() + scratchElements;
      conv->values = conv->filter + plan::alignElements(conv->shapes.filterFloats);
    } else if (pools[i]) {
      pool.emplace();
      pool->shapes = *pools[i];
      pool->values = scratch.data() + scratchElements;
    }
    i = runPlanOp(plan, i, last, r, conv ? &*conv : nullptr, pool ? &*pool : nullptr, launch);
  }
  launch.op = -1;
  launch.add(StepLaunch::Kind::SlotRead, "record the end of the run for the input slot", 0);
  return out;
}

int64_t launchCount(const std::vector<StepLaunch> &launches) {
  int64_t n = 0;
  for (const StepLaunch &l : launches)
    n += l.kind == StepLaunch::Kind::Kernel || l.kind == StepLaunch::Kind::Gemm ||
         l.kind == StepLaunch::Kind::Memset || l.kind == StepLaunch::Kind::Metrics ||
         l.kind == StepLaunch::Kind::Cudnn || l.kind == StepLaunch::Kind::Collective;
  return n;
}

std::string formatLaunches(const plan::Plan &plan, const std::vector<StepLaunch> &launches) {
  std::string text;
  for (const StepLaunch &l : launches) {
    if (l.op >= 0) {
      const plan::Op &op = plan.ops[static_cast<size_t>(l.op)];
      text += fmt::format("#{} {}", l.op, plan::opName(op.kind));
      if (!op.out.empty())
        text += fmt::format(" ({})", plan.buffers[static_cast<size_t>(op.out[0])].name);
      text += ": ";
    }
    text += l.what;
    if (l.elements > 0)
      text += fmt::format(" x{}", l.elements);
    text += "\n";
  }
  return text;
}

} // namespace netc::runtime::cuda
