// StepCommunication.cpp -- a plan's communication ops on the CUDA backend
// (StepCommunication.h).
#include "runtime/cuda/StepCommunication.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/NcclCommunicator.h"

#include <fmt/format.h>

namespace netc::runtime::cuda {

Status StepCommunication::prepare(const plan::Plan &plan) {
  release();
  plan_ = &plan;
  auto collectives = ncclCollectives(plan, 0, plan.ops.size());
  if (!collectives)
    return collectives.error();
  collectiveOf_.assign(plan.ops.size(), -1);
  for (size_t k = 0; k < collectives->size(); ++k)
    collectiveOf_[(*collectives)[k].op] = static_cast<int>(k);
  collectives_ = std::move(*collectives);
  names_.assign(plan.ops.size(), std::string());
  for (size_t i = 0; i < plan.ops.size(); ++i)
    if (plan::opRole(plan.ops[i].kind) == plan::OpRole::Communication)
      names_[i] = plan::communicationName(plan, plan.ops[i]);
  // Each buffer an all-reduce reads (the gradient arena; local SGD's
  // parameter and state arenas, all reduced before one wait) gets a range.
  stagingBase_.assign(plan.buffers.size(), -1);
  int64_t elements = 0;
  for (const plan::Op &op : plan.ops)
    if (op.kind == plan::OpKind::AllReduce && !op.in.empty() && stagingBase_[size_t(op.in[0])] < 0) {
      stagingBase_[size_t(op.in[0])] = elements;
      elements += plan.buffers[size_t(op.in[0])].fixed;
    }
  staging_.assign(static_cast<size_t>(elements), 0.0f);
  return Status::success();
}

void StepCommunication::release() {
  plan_ = nullptr;
  collectives_.clear();
  collectiveOf_.clear();
  names_.clear();
  staging_.clear();
  stagingBase_.clear();
  started_.clear();
  hostTransfers_.clear();
}

void StepCommunication::attachStages(comm::Communicator *stages) {
  hostTransfers_.attach(stages);
  ncclStages_ = dynamic_cast<NcclCommunicator *>(stages);
}

Status StepCommunication::transferGroup(std::span<const NcclTransfer> transfers,
                                        const std::function<float *(int buffer, int slot)> &address,
                                        cudaStream_t stream) {
  if (transfers.empty())
    return Status::success();
  if (!ncclStages_)
    return fail("a pipeline transfer through NCCL without NCCL's communicator (a bug in netc: "
                "Backend::attachStages)");
  group_.clear();
  for (const NcclTransfer &t : transfers)
    group_.push_back({t.send, t.peer, address(t.buffer, t.slot), t.count});
  const NcclTransfer &first = transfers.front();
  std::string what = names_[first.op];
  if (transfers.size() > 1)
    what += fmt::format(" and {} more transfer{}", transfers.size() - 1, transfers.size() == 2 ? "" : "s");
  return ncclStages_->transferOnDevice(group_, stream, what);
}

Status StepCommunication::transferThroughHost(size_t index, void *const *buffers, int64_t batch,
                                              cudaStream_t stream) {
  const plan::Op &op = plan_->ops[index];
  const bool sending = op.kind == plan::OpKind::Send;
  const int buffer = sending ? op.in[0] : op.out[0];
  const int64_t count = plan_->buffers[static_cast<size_t>(buffer)].perSample * batch;
  float *device = static_cast<float *>(buffers[static_cast<size_t>(buffer)]);
  const int peer = op.get<plan::TransferAttrs>().peer;
  const auto bytes = static_cast<size_t>(count) * sizeof(float);
  if (sending) {
    const std::span<float> copy = hostTransfers_.nextSend(count);
    if (Status s = cudaStatus(cudaMemcpyAsync(copy.data(), device, bytes, cudaMemcpyDeviceToHost, stream),
                              "copying values to send to the next stage");
        !s)
      return s;
    if (Status s = cudaStatus(cudaStreamSynchronize(stream), "copying values to send to the next stage"); !s)
      return s;
    return hostTransfers_.send(peer, names_[index]);
  }
  auto received = hostTransfers_.receive(count, peer, names_[index]);
  if (!received)
    return received.error();
  if (Status s = cudaStatus(cudaMemcpyAsync(device, received->data(), bytes, cudaMemcpyHostToDevice, stream),
                            "copying received values to the GPU");
      !s)
    return s;
  // The receive's host values are reused by the next one: the copy must have left them.
  return cudaStatus(cudaStreamSynchronize(stream), "copying received values to the GPU");
}

void StepCommunication::attach(comm::Communicator *communicator) {
  communicator_ = communicator;
  nccl_ = dynamic_cast<NcclCommunicator *>(communicator);
}

bool StepCommunication::capturable(size_t first, size_t last) const {
  // A host communicator waits on the host; NCCL's collectives are looked up
  // in the plan's, not built again at every run.
  return nccl_ && joinsEveryAllReduce(collectivesIn(collectives_, first, last));
}

Status StepCommunication::run(size_t index, void *const *buffers, int64_t batch, cudaStream_t stream,
                              int64_t &launches) {
  const plan::OpKind kind = plan_->ops[index].kind;
  if (kind == plan::OpKind::Send || kind == plan::OpKind::Receive) {
    if (ncclStages_)
      return fail(fmt::format("op #{} {} reached the op-by-op path through NCCL (a bug in netc: "
                              "ncclTransferRun groups them)",
                              index, plan::opName(kind)));
    return transferThroughHost(index, buffers, batch, stream);
  }
  if (!nccl_)
    return throughHost(index, buffers, stream);
  const int k = collectiveOf_[index];
  if (k < 0)
    return fail(fmt::format("op #{} {} has no NCCL form (a bug in netc)", index,
                            plan::opName(plan_->ops[index].kind)));
  const NcclCollective &c = collectives_[static_cast<size_t>(k)];
  if (c.kind == NcclCollective::Kind::Join)
    return nccl_->join(stream);
  ++launches;
  return nccl_->allReduceOnDevice(c, static_cast<float *>(buffers[static_cast<size_t>(c.buffer)]), stream,
                                  names_[index]);
}

Status StepCommunication::throughHost(size_t index, void *const *buffers, cudaStream_t stream) {
  const plan::Op &op = plan_->ops[index];
  if (!communicator_)
    return fail(fmt::format("the plan's {} needs a communicator (a bug in netc: Backend::attach)",
                            plan::opName(op.kind)));
  if (op.kind == plan::OpKind::AllReduce) {
    const plan::CommAttrs &a = op.get<plan::CommAttrs>();
    const size_t buffer = static_cast<size_t>(op.in[0]);
    float *device = static_cast<float *>(buffers[buffer]) + a.offset;
    float *host = staging_.data() + stagingBase_[buffer] + a.offset;
    if (Status s = cudaStatus(cudaMemcpyAsync(host, device, static_cast<size_t>(a.count) * sizeof(float),
                                              cudaMemcpyDeviceToHost, stream),
                              "copying gradients for an all-reduce");
        !s)
      return s;
    if (Status s = cudaStatus(cudaStreamSynchronize(stream), "copying gradients for an all-reduce"); !s)
      return s;
    auto request =
        communicator_->startAllReduce(host, a.count, comm::DataType::F32, comm::ReduceOp::Sum, names_[index]);
    if (!request)
      return request.error();
    started_.push_back({*request, device, host, a.count, a.mean});
    return Status::success();
  }
  Status status = Status::success();
  for (const Started &s : started_) {
    if (status)
      status = communicator_->wait(s.request);
    if (!status)
      continue;
    if (s.mean) {
      const float scale = 1.0f / float(communicator_->size());
      for (int64_t k = 0; k < s.count; ++k)
        s.host[k] *= scale;
    }
    status = cudaStatus(cudaMemcpyAsync(s.device, s.host, static_cast<size_t>(s.count) * sizeof(float),
                                        cudaMemcpyHostToDevice, stream),
                        "copying reduced gradients back to the GPU");
  }
  started_.clear();
  if (status)
    status = cudaStatus(cudaStreamSynchronize(stream), "copying reduced gradients back to the GPU");
  return status;
}

} // namespace netc::runtime::cuda
