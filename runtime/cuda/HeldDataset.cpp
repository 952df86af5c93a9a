// HeldDataset.cpp -- a training set kept in GPU memory (see HeldDataset.h):
// the free memory checked before the one allocation, the samples and each
// order copied in on the caller's stream, and a batch gathered by the
// ElementBodies.h body through the device launcher (DeviceKernels.cu).
#include "runtime/cuda/HeldDataset.h"
#include "codegen/Plan.h"
#include "runtime/cuda/CudaLauncher.h"
#include "runtime/cuda/CudaStatus.h"

#include <fmt/format.h>

#include <limits>

namespace netc::runtime::cuda {

Status HeldDataset::hold(std::span<const float> features, std::span<const float> labels, int64_t count,
                         int64_t featureWidth, int64_t labelWidth, cudaStream_t stream,
                         const std::string &device, int64_t planBytes) {
  release();
  if (count < 1 || count > std::numeric_limits<int32_t>::max())
    return fail(fmt::format("--data-on-device holds 1 to {} samples, not {}",
                            std::numeric_limits<int32_t>::max(), count));
  if (static_cast<int64_t>(features.size()) != count * featureWidth ||
      static_cast<int64_t>(labels.size()) != count * labelWidth)
    return fail(fmt::format("holding a data set: {} features and {} labels are not {} samples of {} and {} "
                            "(a bug in netc)",
                            features.size(), labels.size(), count, featureWidth, labelWidth));
  const int64_t featureElements = plan::alignElements(count * featureWidth);
  const int64_t labelElements = plan::alignElements(count * labelWidth);
  const int64_t bytes = (featureElements + labelElements + plan::alignElements(count)) * 4;
  size_t freeBytes = 0, totalBytes = 0;
  if (Status s = cudaStatus(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo"); !s)
    return s;
  if (static_cast<size_t>(bytes) > freeBytes)
    return fail(fmt::format("--data-on-device: the training set ({} samples of {} features) needs {} on {}, "
                            "which has {} free of {} besides the network's {}; drop --data-on-device to "
                            "copy each batch in from the host",
                            count, featureWidth, mebibytes(bytes), device,
                            mebibytes(static_cast<int64_t>(freeBytes)),
                            mebibytes(static_cast<int64_t>(totalBytes)), mebibytes(planBytes)));
  if (Status s =
          cudaStatus(cudaMalloc(&block_, static_cast<size_t>(bytes)),
                     fmt::format("allocating {} for the training set on {}", mebibytes(bytes), device));
      !s) {
    block_ = nullptr;
    return s;
  }
  bytes_ = bytes;
  count_ = count;
  featureWidth_ = featureWidth;
  labelWidth_ = labelWidth;
  features_ = static_cast<float *>(block_);
  labels_ = features_ + featureElements;
  order_ = reinterpret_cast<int32_t *>(labels_ + labelElements);
  Status s = cudaStatus(
      cudaMemcpyAsync(features_, features.data(), features.size_bytes(), cudaMemcpyHostToDevice, stream),
      "copying the training set to the GPU");
  if (s && !labels.empty())
    s = cudaStatus(
        cudaMemcpyAsync(labels_, labels.data(), labels.size_bytes(), cudaMemcpyHostToDevice, stream),
        "copying the training labels to the GPU");
  if (s)
    s = cudaStatus(cudaStreamSynchronize(stream), "copying the training set to the GPU");
  if (!s)
    release();
  return s;
}

Status HeldDataset::setOrder(std::span<const int32_t> order, cudaStream_t stream, const StreamWait &wait) {
  if (!block_)
    return fail("setting a sample order without a held data set (a bug in netc: holdDataset first)");
  if (static_cast<int64_t>(order.size()) > count_)
    return fail(fmt::format("a sample order of {} positions for the {} samples held (a bug in netc)",
                            order.size(), count_));
  for (size_t p = 0; p < order.size(); ++p)
    if (order[p] < 0 || order[p] >= count_)
      return fail(fmt::format("position {} of the sample order is sample {}, not one of the {} held "
                              "(a bug in netc)",
                              p, order[p], count_));
  orderLength_ = 0;
  if (order.empty())
    return Status::success();
  if (Status s = cudaStatus(
          cudaMemcpyAsync(order_, order.data(), order.size_bytes(), cudaMemcpyHostToDevice, stream),
          "copying the sample order to the GPU");
      !s)
    return s;
  if (Status s = wait(stream, "copying the sample order to the GPU"); !s)
    return s;
  orderLength_ = static_cast<int64_t>(order.size());
  return Status::success();
}

Status HeldDataset::gather(int64_t first, int64_t count, GatherTarget to, CudaLauncher &launch) const {
  if (first < 0 || count < 0 || first + count > orderLength_)
    return fail(fmt::format("gathering positions [{}, {}) of a sample order of {} (a bug in netc)", first,
                            first + count, orderLength_));
  if (count == 0)
    return Status::success();
  gatherRowsOnDevice({features_, order_ + first, to.features, featureWidth_}, count * featureWidth_, launch);
  if (to.labels && labelWidth_ > 0)
    gatherRowsOnDevice({labels_, order_ + first, to.labels, labelWidth_}, count * labelWidth_, launch);
  return launch.status;
}

void HeldDataset::release() {
  if (block_)
    cudaFree(block_);
  block_ = nullptr;
  bytes_ = count_ = featureWidth_ = labelWidth_ = orderLength_ = 0;
  features_ = labels_ = nullptr;
  order_ = nullptr;
}

} // namespace netc::runtime::cuda
