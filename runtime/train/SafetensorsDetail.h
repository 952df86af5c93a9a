// SafetensorsDetail.h -- helpers shared by the safetensors writer
// (Safetensors.cpp) and reader (SafetensorsReader.cpp): dtype lookup, shape
// arithmetic and the quoting used in messages. Internal to netc_runtime_train.
#pragma once

#include "support/ErrnoText.h"
#include "support/Status.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace netc::train::detail {

/// The position of `dtype` in the reference implementation's dtype order
/// (ascending alignment), or nullopt for an unknown dtype.
std::optional<size_t> dtypeRank(std::string_view dtype);
/// `text` in single quotes, control and non-ASCII bytes escaped, long text
/// shortened: names from a damaged file may hold anything.
std::string quote(std::string_view text);
/// "[2, 3]" (long shapes shortened).
std::string formatShape(std::span<const int64_t> shape);
/// The product of the dimensions, or nullopt if one is negative or it overflows.
std::optional<int64_t> elementsOf(std::span<const int64_t> shape);
/// The byte size of shape x dtype, or an error naming the tensor (unknown or
/// unsupported dtype, negative dimension, overflow).
Expected<uint64_t> byteSizeOf(std::string_view name, std::string_view dtype, std::span<const int64_t> shape);

} // namespace netc::train::detail
