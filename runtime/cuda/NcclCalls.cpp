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

} // namespace netc::runtime::cuda
