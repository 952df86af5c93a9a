// StageTransfers.cpp -- a pipeline stage's host transfers (StageTransfers.h).
#include "runtime/comm/StageTransfers.h"

#include <fmt/format.h>

namespace netc::comm {

namespace {

Status noCommunicator(std::string_view what) {
  return fail(fmt::format("the plan's {} needs the pipeline's communicator (a bug in netc: "
                          "Backend::attachStages)",
                          what));
}

} // namespace

std::span<float> StageTransfers::nextSend(int64_t count) {
  if (copies_.size() <= pending_.size())
    copies_.emplace_back();
  std::vector<float> &copy = copies_[pending_.size()];
  copy.resize(static_cast<size_t>(count));
  return copy;
}

Status StageTransfers::send(int peer, std::string_view what) {
  if (!stages_)
    return noCommunicator(what);
  const std::vector<float> &copy = copies_[pending_.size()];
  auto request =
      stages_->startSend(copy.data(), static_cast<int64_t>(copy.size() * sizeof(float)), peer, what);
  if (!request)
    return request.error();
  pending_.push_back(*request);
  return Status::success();
}

Expected<std::span<const float>> StageTransfers::receive(int64_t count, int peer, std::string_view what) {
  if (!stages_)
    return Error{noCommunicator(what).message()};
  received_.resize(static_cast<size_t>(count));
  auto request =
      stages_->startReceive(received_.data(), count * static_cast<int64_t>(sizeof(float)), peer, what);
  if (!request)
    return request.error();
  if (Status s = stages_->wait(*request); !s)
    return Error{s.message()};
  return std::span<const float>(received_);
}

Status StageTransfers::finish() {
  Status status = Status::success();
  for (int64_t request : pending_)
    if (status)
      status = stages_->wait(request);
  pending_.clear();
  return status;
}

} // namespace netc::comm
