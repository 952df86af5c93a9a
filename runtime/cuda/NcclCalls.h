// NcclCalls.h -- what netc asks of NCCL, as pure data, so that CI checks it
// without a GPU or NCCL: the unique id a job's ranks share, as the text a
// parent process hands to its children (NETC_NCCL_ID) and its parse, which
// names the first bad character; NCCL's numbers for netc's element types
// and reductions; and the collectives of a range of plan ops -- each
// gradient bucket's all-reduce (buffer, offset, count, type, reduction) on
// the communication stream and the join of that stream back into the
// compute stream at the plan's wait; and a pipeline stage's sends and
// receives, grouped so that ranks whose NCCL calls run strictly one after
// another cannot wait for each other in a cycle (ncclTransferRun).
// runtime/cuda/NcclCommunicator.cpp issues exactly these; StepLaunches.cpp
// records them.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "support/Status.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::runtime::cuda {

/// NCCL_UNIQUE_ID_BYTES: the opaque id every rank of one communicator passes to its init.
inline constexpr size_t kNcclIdBytes = 128;
using NcclId = std::array<uint8_t, kNcclIdBytes>;

/// The id as 256 lowercase hexadecimal digits.
std::string formatNcclId(const NcclId &id);
/// The id from formatNcclId's text; an error names `source` (where the
/// text came from, e.g. "NETC_NCCL_ID"), its length or the first character
/// that is not a hexadecimal digit.
Expected<NcclId> parseNcclId(std::string_view text, std::string_view source);

/// nccl.h's ncclDataType_t and ncclRedOp_t values netc uses (Nccl.cpp
/// checks them against the header).
enum class NcclType : int { Uint8 = 1, Int64 = 4, Float32 = 7, Float64 = 8 };
enum class NcclReduction : int { Sum = 0, Max = 2, Avg = 4 };
NcclType ncclTypeOf(comm::DataType type);
NcclReduction ncclReductionOf(comm::ReduceOp op);
std::string_view ncclTypeName(NcclType type);
std::string_view ncclReductionName(NcclReduction reduction);

/// One stream-ordered collective of a step.
struct NcclCollective {
  enum class Kind {
    AllReduce, // after the compute stream's work so far, on the communication stream
    Join,      // the compute stream waits for every all-reduce issued before
  };
  Kind kind = Kind::AllReduce;
  size_t op = 0;      // the plan op
  int buffer = -1;    // the arena reduced in place
  int64_t offset = 0; // elements into it
  int64_t count = 0;  // elements reduced
  NcclType type = NcclType::Float32;
  NcclReduction reduction = NcclReduction::Sum;
  int bucket = -1; // the gradient bucket (-1: a replica average)
  bool operator==(const NcclCollective &) const = default;
};

/// The collectives of ops [first, last) of `plan`, in order: a gradient
/// bucket is summed (the plan scales the loss by the global batch), a
/// replica average (local SGD) is NCCL's average. An error names an op
/// whose range lies outside its buffer.
Expected<std::vector<NcclCollective>> ncclCollectives(const plan::Plan &plan, size_t first, size_t last);

/// The collectives of ops [first, last) among `all`, the whole plan's (in
/// op order): what ncclCollectives(plan, first, last) gives, without a copy.
std::span<const NcclCollective> collectivesIn(const std::vector<NcclCollective> &all, size_t first,
                                              size_t last);

/// Whether `collectives` can be captured as one graph: every all-reduce is
/// joined back before their end (a capture must end with the
/// communication stream joined), and every join joins an all-reduce of the
/// range (one that waits for work enqueued outside the capture cannot be
/// captured: a wait run on its own, as after an empty step).
bool joinsEveryAllReduce(std::span<const NcclCollective> collectives);

/// One send or receive of a pipeline stage's micro-batch between
/// neighbouring stages (a plan's Send or Receive op): NCCL moves `count`
/// floats of `buffer` in activation slot `slot`, in place, to or from
/// `peer` (its rank in the pipeline's communicator).
struct NcclTransfer {
  size_t op = 0;
  bool send = false;
  int peer = -1;
  int buffer = -1;
  int slot = 0;
  int64_t count = 0;
  bool operator==(const NcclTransfer &) const = default;
};

/// One send or receive of a group as NCCL gets it (NcclCommunicator::
/// transferOnDevice): the device address of an NcclTransfer's buffer.
struct DeviceTransfer {
  bool send = false;
  int peer = -1; // its rank in the pipeline's communicator
  float *data = nullptr;
  int64_t count = 0; // floats
};

/// A run of a stage plan's ops, as the CUDA backend issues it through NCCL:
/// ranges of ops that move nothing between stages (computation, the
/// replicas' all-reduces), and groups of transfers issued together
/// (ncclGroupStart/End, one wait for the whole group).
struct NcclRunPart {
  bool group = false;
  size_t first = 0, last = 0;          // !group: ops [first, last)
  std::vector<NcclTransfer> transfers; // group: issued together
};
struct NcclTransferRun {
  std::vector<NcclRunPart> parts;
  /// The sends that close the run (or were held before it, when it has no
  /// transfers), held back to join the next run's first group; the backend
  /// issues them alone before anything else uses the communicator.
  std::vector<NcclTransfer> held;
};

/// How ops [first, last) of a stage plan, run on micro-batches of `batch`
/// samples in activation slot `slot`, go through NCCL, given the sends
/// `held` from the previous run. A rank's NCCL calls may run strictly one
/// after another and a send completes only once its receiver runs the
/// matching receive, so a send that closes a run (a micro-batch's forward
/// or backward) is held back and issued in one group with the receives that
/// open the next run: under 1F1B, stage 0 sends micro-batch 1's values and
/// then receives micro-batch 0's gradient while stage 1 sends that gradient
/// and then receives micro-batch 1's values; issued one at a time, each
/// waits for the other forever. Held sends join the run's first group,
/// unless memory they read would be written first (transfersOverlap): by
/// an op before that group, or by one of its receives (the plan's memory
/// reuse often puts a stage's received values and its gradient, sent back,
/// at one place); then they go first, alone. Consecutive transfer ops form
/// one group, except that a receive into memory a send of its group reads
/// starts the next group (a split layer's part sends its input gradient's
/// partial sum and receives the whole into the same buffer; its receiver
/// needs nothing from it in between). An error names a transfer op without
/// its buffer or a peer rank of the pipeline.
/// Whether buffer `a` of activation slot `slotA` and buffer `b` of slot
/// `slotB` of `plan` share memory (an input: its input slot; a fixed buffer
/// has one place), at any batch.
bool transfersOverlap(const plan::Plan &plan, int a, int slotA, int b, int slotB);

Expected<NcclTransferRun> ncclTransferRun(const plan::Plan &plan, size_t first, size_t last, int64_t batch,
                                          int slot, std::vector<NcclTransfer> held);

} // namespace netc::runtime::cuda
