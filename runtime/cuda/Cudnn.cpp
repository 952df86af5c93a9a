// Cudnn.cpp -- loading cuDNN on demand, preparing convolution calls and
// issuing them (Cudnn.h).
#include "runtime/cuda/Cudnn.h"
#include "runtime/cuda/CudaLauncher.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace netc::runtime::cuda {

cudnnMathType_t cudnnMathType(Precision precision) {
  return precision == Precision::Tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

std::vector<int> allowedMathTypes(Precision precision) {
  if (precision == Precision::Tf32)
    return {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_FMA_MATH};
  return {CUDNN_FMA_MATH};
}

std::string cudnnLibraryName() {
  return fmt::format("libcudnn.so.{}", CUDNN_MAJOR);
}

struct Cudnn::Functions {
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnDestroy) destroy = nullptr;
  decltype(&cudnnSetStream) setStream = nullptr;
  decltype(&cudnnGetVersion) getVersion = nullptr;
  decltype(&cudnnGetErrorString) errorString = nullptr;
  decltype(&cudnnCreateTensorDescriptor) createTensor = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) destroyTensor = nullptr;
  decltype(&cudnnSetTensorNdDescriptor) setTensor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) createFilter = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) destroyFilter = nullptr;
  decltype(&cudnnSetFilterNdDescriptor) setFilter = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) createConvolution = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) destroyConvolution = nullptr;
  decltype(&cudnnSetConvolutionNdDescriptor) setConvolution = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) setGroups = nullptr;
  decltype(&cudnnSetConvolutionMathType) setMathType = nullptr;
  decltype(&cudnnFindConvolutionForwardAlgorithm) findForward = nullptr;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithm) findBackwardData = nullptr;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithm) findBackwardFilter = nullptr;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) forwardWorkspace = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) backwardDataWorkspace = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) backwardFilterWorkspace = nullptr;
  decltype(&cudnnConvolutionForward) forward = nullptr;
  decltype(&cudnnConvolutionBackwardData) backwardData = nullptr;
  decltype(&cudnnConvolutionBackwardFilter) backwardFilter = nullptr;
  decltype(&cudnnCreatePoolingDescriptor) createPooling = nullptr;
  decltype(&cudnnDestroyPoolingDescriptor) destroyPooling = nullptr;
  decltype(&cudnnSetPoolingNdDescriptor) setPooling = nullptr;
  decltype(&cudnnPoolingForward) poolingForward = nullptr;
  decltype(&cudnnPoolingBackward) poolingBackward = nullptr;
};

/// One prepared call: its descriptors (x and y for `batch`) and algorithm.
struct Cudnn::Prepared {
  CudnnPass pass = CudnnPass::Forward;
  const Functions *f = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t convolution = nullptr;
  cudnnPoolingDescriptor_t pooling = nullptr;
  int batch = -1;
  int algorithm = 0;
  size_t workspace = 0;
  bool measured = false;
  ~Prepared() {
    if (x)
      f->destroyTensor(x);
    if (y)
      f->destroyTensor(y);
    if (w)
      f->destroyFilter(w);
    if (convolution)
      f->destroyConvolution(convolution);
    if (pooling)
      f->destroyPooling(pooling);
  }
};

Cudnn::Cudnn() = default;

Cudnn::~Cudnn() {
  prepared_.clear();
  if (handle_ && functions_ && functions_->destroy)
    functions_->destroy(handle_);
}

Status Cudnn::check(cudnnStatus_t status, const char *call) const {
  if (status == CUDNN_STATUS_SUCCESS)
    return Status::success();
  const char *text = functions_ && functions_->errorString ? functions_->errorString(status) : nullptr;
  return fail(
      fmt::format("{} failed: {} ({})", call, text ? text : "unknown status", static_cast<int>(status)));
}

Expected<std::unique_ptr<Cudnn>> Cudnn::open(cudaStream_t stream) {
  std::unique_ptr<Cudnn> out(new Cudnn());
  const std::string name = cudnnLibraryName();
  if (!out->library_.open(name))
    return fail(
        fmt::format("cannot load cuDNN ({}): {}. Put cuDNN {} on LD_LIBRARY_PATH, or run on the CPU with "
                    "--device cpu",
                    name, out->library_.why(), CUDNN_MAJOR));
  out->functions_ = std::make_unique<Functions>();
  Functions &f = *out->functions_;
  auto resolve = [&](auto &function, const char *symbol) { out->library_.resolve(function, symbol); };
  resolve(f.create, "cudnnCreate");
  resolve(f.destroy, "cudnnDestroy");
  resolve(f.setStream, "cudnnSetStream");
  resolve(f.getVersion, "cudnnGetVersion");
  resolve(f.errorString, "cudnnGetErrorString");
  resolve(f.createTensor, "cudnnCreateTensorDescriptor");
  resolve(f.destroyTensor, "cudnnDestroyTensorDescriptor");
  resolve(f.setTensor, "cudnnSetTensorNdDescriptor");
  resolve(f.createFilter, "cudnnCreateFilterDescriptor");
  resolve(f.destroyFilter, "cudnnDestroyFilterDescriptor");
  resolve(f.setFilter, "cudnnSetFilterNdDescriptor");
  resolve(f.createConvolution, "cudnnCreateConvolutionDescriptor");
  resolve(f.destroyConvolution, "cudnnDestroyConvolutionDescriptor");
  resolve(f.setConvolution, "cudnnSetConvolutionNdDescriptor");
  resolve(f.setGroups, "cudnnSetConvolutionGroupCount");
  resolve(f.setMathType, "cudnnSetConvolutionMathType");
  resolve(f.findForward, "cudnnFindConvolutionForwardAlgorithm");
  resolve(f.findBackwardData, "cudnnFindConvolutionBackwardDataAlgorithm");
  resolve(f.findBackwardFilter, "cudnnFindConvolutionBackwardFilterAlgorithm");
  resolve(f.forwardWorkspace, "cudnnGetConvolutionForwardWorkspaceSize");
  resolve(f.backwardDataWorkspace, "cudnnGetConvolutionBackwardDataWorkspaceSize");
  resolve(f.backwardFilterWorkspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  resolve(f.forward, "cudnnConvolutionForward");
  resolve(f.backwardData, "cudnnConvolutionBackwardData");
  resolve(f.backwardFilter, "cudnnConvolutionBackwardFilter");
  resolve(f.createPooling, "cudnnCreatePoolingDescriptor");
  resolve(f.destroyPooling, "cudnnDestroyPoolingDescriptor");
  resolve(f.setPooling, "cudnnSetPoolingNdDescriptor");
  resolve(f.poolingForward, "cudnnPoolingForward");
  resolve(f.poolingBackward, "cudnnPoolingBackward");
  if (const std::string &missing = out->library_.missing(); !missing.empty())
    return fail(
        fmt::format("{} lacks {}: it is not the cuDNN netc was built for ({})", name, missing, CUDNN_MAJOR));
  out->version_ = f.getVersion();
  if (out->version_ / 10000 != CUDNN_MAJOR)
    return fail(
        fmt::format("{} is cuDNN {}, but netc was built for cuDNN {}", name, out->version_, CUDNN_MAJOR));
  if (Status s = out->check(f.create(&out->handle_), "cudnnCreate"); !s)
    return fail(fmt::format("{} (is the GPU usable? see nvidia-smi)", s.message()));
  if (Status s = out->check(f.setStream(out->handle_, stream), "cudnnSetStream"); !s)
    return fail(s.message());
  return out;
}

Status Cudnn::describeTensors(Prepared &p, int rank, const int *xDims, const int *xStrides, const int *yDims,
                              const int *yStrides) {
  const Functions &f = *functions_;
  if (Status st = check(f.setTensor(p.x, CUDNN_DATA_FLOAT, rank, xDims, xStrides),
                        "cudnnSetTensorNdDescriptor (input)");
      !st)
    return st;
  if (Status st = check(f.setTensor(p.y, CUDNN_DATA_FLOAT, rank, yDims, yStrides),
                        "cudnnSetTensorNdDescriptor (output)");
      !st)
    return st;
  p.batch = xDims[0];
  return Status::success();
}

Status Cudnn::describe(Prepared &p, const CudnnShapes &s) {
  // The filter and the convolution do not depend on the batch.
  return describeTensors(p, s.rank, s.xDims.data(), s.xStrides.data(), s.yDims.data(), s.yStrides.data());
}

Expected<int> Cudnn::preparePooling(const CudnnPoolShapes &s) {
  const Functions &f = *functions_;
  auto p = std::make_unique<Prepared>();
  p->f = &f;
  for (auto [status, what] : {std::pair{f.createTensor(&p->x), "cudnnCreateTensorDescriptor"},
                              {f.createTensor(&p->y), "cudnnCreateTensorDescriptor"},
                              {f.createPooling(&p->pooling), "cudnnCreatePoolingDescriptor"}})
    if (Status st = check(status, what); !st)
      return fail(st.message());
  if (Status st =
          describeTensors(*p, s.rank, s.xDims.data(), s.xStrides.data(), s.yDims.data(), s.yStrides.data());
      !st)
    return fail(st.message());
  const cudnnPoolingMode_t mode =
      s.max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  if (Status st = check(f.setPooling(p->pooling, mode, CUDNN_PROPAGATE_NAN, s.rank - 2, s.window.data(),
                                     s.pad.data(), s.stride.data()),
                        "cudnnSetPoolingNdDescriptor");
      !st)
    return fail(st.message());
  prepared_.push_back(std::move(p));
  return static_cast<int>(prepared_.size() - 1);
}

Status Cudnn::runPooling(const CudnnPoolCall &call) {
  const Functions &f = *functions_;
  Prepared &p = *prepared_[static_cast<size_t>(call.slot)];
  const CudnnPoolShapes &s = *call.shapes;
  if (s.xDims[0] != p.batch)
    if (Status st =
            describeTensors(p, s.rank, s.xDims.data(), s.xStrides.data(), s.yDims.data(), s.yStrides.data());
        !st)
      return st;
  const float one = 1.0f;
  if (!call.backward)
    return check(f.poolingForward(handle_, p.pooling, &one, p.x, call.x, &call.beta, p.y, call.out),
                 "cudnnPoolingForward");
  return check(f.poolingBackward(handle_, p.pooling, &one, p.y, call.y, p.y, call.dy, p.x, call.x, &call.beta,
                                 p.x, call.out),
               "cudnnPoolingBackward");
}

Expected<int> Cudnn::prepare(CudnnPass pass, const CudnnShapes &s, Precision precision,
                             const std::string &key, AlgorithmCache &cache) {
  const Functions &f = *functions_;
  auto p = std::make_unique<Prepared>();
  p->pass = pass;
  p->f = &f;
  for (auto [status, what] : {std::pair{f.createTensor(&p->x), "cudnnCreateTensorDescriptor"},
                              {f.createTensor(&p->y), "cudnnCreateTensorDescriptor"},
                              {f.createFilter(&p->w), "cudnnCreateFilterDescriptor"},
                              {f.createConvolution(&p->convolution), "cudnnCreateConvolutionDescriptor"}})
    if (Status st = check(status, what); !st)
      return fail(st.message());
  if (Status st = describe(*p, s); !st)
    return fail(st.message());
  if (Status st = check(f.setFilter(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.rank, s.wDims.data()),
                        "cudnnSetFilterNdDescriptor");
      !st)
    return fail(st.message());
  if (Status st = check(f.setConvolution(p->convolution, s.rank - 2, s.pad.data(), s.stride.data(),
                                         s.dilation.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                        "cudnnSetConvolutionNdDescriptor");
      !st)
    return fail(st.message());
  if (Status st = check(f.setGroups(p->convolution, s.groups), "cudnnSetConvolutionGroupCount"); !st)
    return fail(st.message());
  if (Status st =
          check(f.setMathType(p->convolution, cudnnMathType(precision)), "cudnnSetConvolutionMathType");
      !st)
    return fail(st.message());

  CachedAlgorithm choice;
  const std::vector<int> allowed = allowedMathTypes(precision);
  auto cached = cache.entries.find(key);
  if (cached != cache.entries.end() &&
      std::find(allowed.begin(), allowed.end(), cached->second.mathType) != allowed.end()) {
    choice = cached->second; // (an entry whose math the precision forbids is measured again)
  } else {                   // measure every algorithm (cuDNN allocates what it needs for this)
    constexpr int kMost = 16;
    std::vector<AlgorithmTrial> trials;
    int returned = 0;
    auto collect = [&](const auto &results) {
      for (int i = 0; i < returned; ++i)
        trials.push_back({static_cast<int>(results[static_cast<size_t>(i)].algo),
                          results[static_cast<size_t>(i)].status == CUDNN_STATUS_SUCCESS,
                          results[static_cast<size_t>(i)].time, results[static_cast<size_t>(i)].memory,
                          results[static_cast<size_t>(i)].determinism == CUDNN_DETERMINISTIC,
                          static_cast<int>(results[static_cast<size_t>(i)].mathType)});
    };
    Status found = Status::success();
    if (pass == CudnnPass::Forward) {
      std::array<cudnnConvolutionFwdAlgoPerf_t, kMost> results{};
      found =
          check(f.findForward(handle_, p->x, p->w, p->convolution, p->y, kMost, &returned, results.data()),
                "cudnnFindConvolutionForwardAlgorithm");
      collect(results);
    } else if (pass == CudnnPass::BackwardData) {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, kMost> results{};
      found = check(
          f.findBackwardData(handle_, p->w, p->y, p->convolution, p->x, kMost, &returned, results.data()),
          "cudnnFindConvolutionBackwardDataAlgorithm");
      collect(results);
    } else {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, kMost> results{};
      found = check(
          f.findBackwardFilter(handle_, p->x, p->y, p->convolution, p->w, kMost, &returned, results.data()),
          "cudnnFindConvolutionBackwardFilterAlgorithm");
      collect(results);
    }
    if (!found)
      return fail(found.message());
    const std::optional<size_t> pick = pickTrial(trials, allowed, kWorkspaceLimit);
    if (!pick)
      return fail(fmt::format("cuDNN offers no {} algorithm with {} math for {}", passName(pass),
                              precision == Precision::Fp32 ? "FP32 (no TF32)" : "any", shapeKey(s)));
    choice = {trials[*pick].algorithm, trials[*pick].mathType};
    cache.entries[key] = choice;
    cache.changed = true;
    p->measured = true;
  }
  p->algorithm = choice.algorithm;
  if (Status st = check(f.setMathType(p->convolution, static_cast<cudnnMathType_t>(choice.mathType)),
                        "cudnnSetConvolutionMathType");
      !st)
    return fail(st.message());
  cudnnStatus_t sized = CUDNN_STATUS_SUCCESS;
  if (pass == CudnnPass::Forward)
    sized = f.forwardWorkspace(handle_, p->x, p->w, p->convolution, p->y,
                               static_cast<cudnnConvolutionFwdAlgo_t>(p->algorithm), &p->workspace);
  else if (pass == CudnnPass::BackwardData)
    sized = f.backwardDataWorkspace(handle_, p->w, p->y, p->convolution, p->x,
                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(p->algorithm), &p->workspace);
  else
    sized =
        f.backwardFilterWorkspace(handle_, p->x, p->y, p->convolution, p->w,
                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(p->algorithm), &p->workspace);
  if (Status st = check(sized, "cudnnGetConvolution*WorkspaceSize"); !st)
    return fail(fmt::format("{} for {} algorithm {} (a stale entry of the algorithm cache? delete {})",
                            st.message(), passName(pass), p->algorithm,
                            "cudnn-algorithms.tsv in netc's cache folder"));
  prepared_.push_back(std::move(p));
  return static_cast<int>(prepared_.size() - 1);
}

size_t Cudnn::workspaceBytes(int slot) const {
  return prepared_[static_cast<size_t>(slot)]->workspace;
}

bool Cudnn::measured(int slot) const {
  return prepared_[static_cast<size_t>(slot)]->measured;
}

Status Cudnn::run(const CudnnCall &call) {
  const Functions &f = *functions_;
  Prepared &p = *prepared_[static_cast<size_t>(call.slot)];
  if (call.shapes->xDims[0] != p.batch) {
    if (Status st = describe(p, *call.shapes); !st)
      return st;
    size_t needed = 0;
    cudnnStatus_t sized = CUDNN_STATUS_SUCCESS;
    if (p.pass == CudnnPass::Forward)
      sized = f.forwardWorkspace(handle_, p.x, p.w, p.convolution, p.y,
                                 static_cast<cudnnConvolutionFwdAlgo_t>(p.algorithm), &needed);
    else if (p.pass == CudnnPass::BackwardData)
      sized = f.backwardDataWorkspace(handle_, p.w, p.y, p.convolution, p.x,
                                      static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algorithm), &needed);
    else
      sized = f.backwardFilterWorkspace(handle_, p.x, p.y, p.convolution, p.w,
                                        static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algorithm), &needed);
    if (Status st = check(sized, "cudnnGetConvolution*WorkspaceSize"); !st)
      return st;
    if (needed > workspaceBytes_)
      return fail(
          fmt::format("cuDNN's {} algorithm {} needs {} bytes of workspace at batch {}, more than the {} "
                      "reserved at load",
                      passName(p.pass), p.algorithm, needed, p.batch, workspaceBytes_));
  }
  const float one = 1.0f;
  switch (p.pass) {
  case CudnnPass::Forward:
    return check(f.forward(handle_, &one, p.x, call.x, p.w, call.w, p.convolution,
                           static_cast<cudnnConvolutionFwdAlgo_t>(p.algorithm), workspace_, workspaceBytes_,
                           &call.beta, p.y, call.out),
                 "cudnnConvolutionForward");
  case CudnnPass::BackwardData:
    return check(f.backwardData(handle_, &one, p.w, call.w, p.y, call.dy, p.convolution,
                                static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algorithm), workspace_,
                                workspaceBytes_, &call.beta, p.x, call.out),
                 "cudnnConvolutionBackwardData");
  case CudnnPass::BackwardFilter:
    return check(f.backwardFilter(handle_, &one, p.x, call.x, p.y, call.dy, p.convolution,
                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algorithm), workspace_,
                                  workspaceBytes_, &call.beta, p.w, call.out),
                 "cudnnConvolutionBackwardFilter");
  }
  return Status::success();
}

namespace {

/// Issues one cuDNN call through `launch` (its library), keeping the status.
template <class Issue> void issueCudnnCall(CudaLauncher &launch, Issue issue) {
  if (!launch.status)
    return;
  launch.record(launch.cudnnLibrary ? issue(*launch.cudnnLibrary)
                                    : Status(fail("a cuDNN call without cuDNN loaded (a bug in netc)")));
  ++launch.launches;
}

} // namespace

void CudaLauncher::cudnn(const CudnnCall &call) {
  issueCudnnCall(*this, [&](Cudnn &library) { return library.run(call); });
}

void CudaLauncher::cudnnPool(const CudnnPoolCall &call) {
  issueCudnnCall(*this, [&](Cudnn &library) { return library.runPooling(call); });
}

} // namespace netc::runtime::cuda
