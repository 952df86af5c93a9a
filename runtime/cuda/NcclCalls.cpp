// NcclCalls.cpp -- NCCL's arguments as pure data (NcclCalls.h).
#include "runtime/cuda/NcclCalls.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc::runtime::cuda {

std::string formatNcclId(const NcclId &id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * kNcclIdBytes);
  for (uint8_t byte : id) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

Expected<NcclId> parseNcclId(std::string_view text, std::string_view source) {
  if (text.size() != 2 * kNcclIdBytes)
    return fail(fmt::format("{} has {} characters, but an NCCL unique id is {} hexadecimal digits: it comes "
                            "from the netc that started this rank (--gpus), so run that netc again",
                            source, text.size(), 2 * kNcclIdBytes));
  NcclId id{};
  for (size_t i = 0; i < text.size(); ++i) {
    const int value = hexValue(text[i]);
    if (value < 0) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      return fail(fmt::format("{}: character {} is {}, not a hexadecimal digit", source, i + 1,
                              c >= 0x20 && c < 0x7f ? fmt::format("'{}'", text[i])
                                                    : fmt::format("byte 0x{:02x}", unsigned{c})));
    }
    id[i / 2] = static_cast<uint8_t>(i % 2 == 0 ? value << 4 : id[i / 2] | value);
  }
  return id;
}

NcclType ncclTypeOf(comm::DataType type) {
  switch (type) {
  case comm::DataType::F32: return NcclType::Float32;
  case comm::DataType::F64: return NcclType::Float64;
  case comm::DataType::I64: return NcclType::Int64;
  case comm::DataType::U8: return NcclType::Uint8;
  }
  return NcclType::Uint8;
}

NcclReduction ncclReductionOf(comm::ReduceOp op) {
  return op == comm::ReduceOp::Max ? NcclReduction::Max : NcclReduction::Sum;
}

std::string_view ncclTypeName(NcclType type) {
  switch (type) {
  case NcclType::Uint8: return "uint8";
  case NcclType::Int64: return "int64";
  case NcclType::Float32: return "float32";
  case NcclType::Float64: return "float64";
  }
  return "?";
}

std::string_view ncclReductionName(NcclReduction reduction) {
  switch (reduction) {
  case NcclReduction::Sum: return "sum";
  case NcclReduction::Max: return "max";
  case NcclReduction::Avg: return "avg";
  }
  return "?";
}

Expected<std::vector<NcclCollective>> ncclCollectives(const plan::Plan &plan, size_t first, size_t last) {
  std::vector<NcclCollective> out;
  for (size_t i = first; i < last && i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    if (op.kind == plan::OpKind::AllReduceWait) {
      out.push_back({NcclCollective::Kind::Join, i});
      continue;
    }
    if (op.kind != plan::OpKind::AllReduce)
      continue;
    const plan::CommAttrs &a = op.get<plan::CommAttrs>();
    const int buffer = op.in.empty() ? -1 : op.in[0];
    const int64_t size = buffer >= 0 && static_cast<size_t>(buffer) < plan.buffers.size()
                             ? plan.buffers[size_t(buffer)].fixed
                             : 0;
    if (buffer < 0 || a.offset < 0 || a.count < 1 || a.offset > size || a.count > size - a.offset)
      return fail(fmt::format("op #{} all-reduce: elements [{}, +{}) lie outside its buffer of {} (a bug in "
                              "netc's plan)",
                              i, a.offset, a.count, size));
    NcclCollective c;
    c.kind = NcclCollective::Kind::AllReduce;
    c.op = i;
    c.buffer = buffer;
    c.offset = a.offset;
    c.count = a.count;
    c.type = NcclType::Float32;
    c.reduction = a.mean ? NcclReduction::Avg : NcclReduction::Sum;
    c.bucket = a.bucket;
    out.push_back(c);
  }
  return out;
}

std::span<const NcclCollective> collectivesIn(const std::vector<NcclCollective> &all, size_t first,
                                              size_t last) {
  auto byOp = [](const NcclCollective &c, size_t op) { return c.op < op; };
  const auto begin = std::lower_bound(all.begin(), all.end(), first, byOp);
  const auto end = std::lower_bound(begin, all.end(), std::max(first, last), byOp);
  return {begin, end};
}

bool joinsEveryAllReduce(std::span<const NcclCollective> collectives) {
  bool open = false; // an all-reduce since the last join
  for (const NcclCollective &c : collectives) {
    if (c.kind == NcclCollective::Kind::AllReduce) {
      open = true;
      continue;
    }
    if (!open) // joins all-reduces enqueued outside the range
      return false;
    open = false;
  }
  return !open;
}

bool transfersOverlap(const plan::Plan &plan, int a, int slotA, int b, int slotB) {
  const plan::Buffer &x = plan.buffers[static_cast<size_t>(a)], &y = plan.buffers[static_cast<size_t>(b)];
  if (!x.batchScaled() || !y.batchScaled())
    return a == b; // a fixed buffer has one place, its own
  // A batch-scaled buffer of a slot holds its samples in one range, at its
  // per-sample offset times the samples: ranges meet where those do.
  if (x.isInput() != y.isInput() || slotA != slotB)
    return false;
  return x.arenaOffset < y.arenaOffset + y.perSample && y.arenaOffset < x.arenaOffset + x.perSample;
}

Expected<NcclTransferRun> ncclTransferRun(const plan::Plan &plan, size_t first, size_t last, int64_t batch,
                                          int slot, std::vector<NcclTransfer> held) {
  NcclTransferRun out;
  last = std::min(last, plan.ops.size());
  auto isTransfer = [&](size_t i) {
    return plan.ops[i].kind == plan::OpKind::Send || plan.ops[i].kind == plan::OpKind::Receive;
  };
  auto overlapsHeld = [&](int buffer) {
    return std::any_of(held.begin(), held.end(), [&](const NcclTransfer &t) {
      return transfersOverlap(plan, t.buffer, t.slot, buffer, slot);
    });
  };
  auto flushHeld = [&] {
    if (!held.empty())
      out.parts.push_back({true, 0, 0, std::move(held)});
    held.clear();
  };
  for (size_t begin = first; begin < last;) {
    size_t end = begin;
    for (; end < last && !isTransfer(end); ++end) {
      const std::vector<int> &writes = plan.ops[end].out;
      if (!held.empty() && std::any_of(writes.begin(), writes.end(), overlapsHeld)) {
        // It writes memory a held send reads: the held sends go first.
        if (end > begin)
          out.parts.push_back({false, begin, end, {}});
        flushHeld();
        begin = end;
      }
    }
    if (end > begin)
      out.parts.push_back({false, begin, end, {}});
    if (end == last)
      break;
    // Consecutive transfers form one group -- but a receive into memory a
    // send of the group reads starts a group of its own after it (a split
    // layer's part passes on its input gradient's sum and takes the whole
    // back in the same buffer): the send has then been received before the
    // receive writes, and its receiver sends nothing it needs first.
    std::vector<NcclRunPart> groups(1, NcclRunPart{true, 0, 0, {}});
    bool receives = false, receivesOverHeld = false;
    for (; end < last && isTransfer(end); ++end) {
      const plan::Op &op = plan.ops[end];
      const bool send = op.kind == plan::OpKind::Send;
      const std::vector<int> &buffers = send ? op.in : op.out;
      const int buffer = buffers.empty() ? -1 : buffers[0];
      const int peer =
          std::holds_alternative<plan::TransferAttrs>(op.attrs) ? op.get<plan::TransferAttrs>().peer : -1;
      if (buffer < 0 || static_cast<size_t>(buffer) >= plan.buffers.size() || peer < 0 ||
          peer >= plan.pipelineRanks || peer == plan.pipelineRank)
        return fail(
            fmt::format("op #{} {} of stage {} of {} has no buffer or peer rank (a bug in netc's plan)", end,
                        plan::opName(op.kind), plan.stage, plan.stages));
      const NcclTransfer transfer{end,    send, peer,
                                  buffer, slot, plan.buffers[size_t(buffer)].perSample * batch};
      const std::vector<NcclTransfer> &current = groups.back().transfers;
      if (!send && std::any_of(current.begin(), current.end(), [&](const NcclTransfer &t) {
            return t.send && transfersOverlap(plan, t.buffer, t.slot, buffer, slot);
          }))
        groups.push_back(NcclRunPart{true, 0, 0, {}});
      groups.back().transfers.push_back(transfer);
      receives = receives || !send;
      receivesOverHeld = receivesOverHeld || (groups.size() == 1 && !send && overlapsHeld(buffer));
    }
    // The held sends join the first group, unless one of its receives would
    // write what they read while they send it (a gradient sent from the
    // memory the next micro-batch's values arrive in): then they go first, alone.
    if (receivesOverHeld)
      flushHeld();
    std::vector<NcclTransfer> &opening = groups.front().transfers;
    opening.insert(opening.begin(), held.begin(), held.end());
    held.clear();
    if (end == last && !receives)
      held = std::move(opening); // they close the run: join the next run's receives
    else
      for (NcclRunPart &group : groups)
        out.parts.push_back(std::move(group));
    begin = end;
  }
  out.held = std::move(held);
  return out;
}

} // namespace netc::runtime::cuda
