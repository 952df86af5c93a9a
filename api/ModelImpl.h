// ModelImpl.h -- the inside of the public netc::Model handle: the inference
// plan loaded on a backend with a checkpoint's weights, the checkpoint's
// normaliser, and the checked network. Shared by Model
// (Inference.cpp) and `netc build` (AotBuild.cpp), which compiles the same
// plan and weights into a library.
#pragma once

#include "codegen/Plan.h"
#include "ir/Network.h"
#include "netc/Training.h"
#include "runtime/core/Backend.h"
#include "runtime/data/Normalizer.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace netc {

struct Model::Impl {
  plan::Plan plan;
  std::unique_ptr<runtime::Backend> backend;
  data::Normalizer normalizer;
  std::vector<int64_t> inputShape;
  int64_t batch = 128;
  std::string name;
  /// The checked network the plan was built from (its layers' names and shapes).
  ir::Network network;
  std::mutex mutex; // one forward pass at a time on the backend
};

} // namespace netc
