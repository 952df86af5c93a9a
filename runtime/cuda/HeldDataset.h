// HeldDataset.h -- the CUDA backend's copy of a training set in GPU memory
// (--data-on-device, Backend::holdDataset): one device allocation of its own
// (apart from the plan's block) holding every sample's features and labels
// and the current sample order as 32-bit indices. A batch is gathered from
// it into an input slot by two kernels (GatherRowsBody, ElementBodies.h:
// the features, then the labels) on the stream the caller orders them on.
// Every index of an order is checked on the host when it is set, so no
// kernel reads outside the data.
#pragma once

#include "support/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace netc::runtime::cuda {

struct CudaLauncher;

/// Where a gathered batch goes: the features and the labels buffer of one
/// input slot (labels null: the plan reads none).
struct GatherTarget {
  float *features = nullptr;
  float *labels = nullptr;
};

class HeldDataset {
public:
  HeldDataset() = default;
  ~HeldDataset() { release(); }
  HeldDataset(const HeldDataset &) = delete;
  HeldDataset &operator=(const HeldDataset &) = delete;

  /// Frees what was held, allocates room for `count` samples of
  /// `featureWidth` features and `labelWidth` labels (row-major, as
  /// writeInput receives them) and for an order of `count` positions, and
  /// copies the samples in on `stream`, waiting for it. Refused before any
  /// allocation when the GPU has too little free memory: the message names
  /// the sizes, `device` ("cuda:0 (NVIDIA H100)") and `planBytes` (what the
  /// loaded plan takes there).
  Status hold(std::span<const float> features, std::span<const float> labels, int64_t count,
              int64_t featureWidth, int64_t labelWidth, cudaStream_t stream, const std::string &device,
              int64_t planBytes);
  /// How the caller waits on the host for a stream (bounded by
  /// --comm-timeout where the stream may wait for NCCL).
  using StreamWait = std::function<Status(cudaStream_t stream, std::string_view what)>;
  /// Checks every position of `order` (in [0, count)) and uploads it on
  /// `stream` (after the gathers issued there before), waiting for it with `wait`.
  Status setOrder(std::span<const int32_t> order, cudaStream_t stream, const StreamWait &wait);
  /// Issues the gather of the samples at positions [first, first + count)
  /// of the order into `to` on launch.stream; refuses positions outside it.
  Status gather(int64_t first, int64_t count, GatherTarget to, CudaLauncher &launch) const;
  /// Device bytes held (0: none).
  int64_t bytes() const { return bytes_; }
  void release();

private:
  void *block_ = nullptr;
  int64_t bytes_ = 0, count_ = 0, featureWidth_ = 0, labelWidth_ = 0, orderLength_ = 0;
  float *features_ = nullptr, *labels_ = nullptr;
  int32_t *order_ = nullptr;
};

} // namespace netc::runtime::cuda
