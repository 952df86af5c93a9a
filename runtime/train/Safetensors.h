// Safetensors.h -- reading and writing checkpoint files in the safetensors
// format (docs/architecture.md §Runtime principles): an 8-byte little-endian header length N, N bytes of
// UTF-8 JSON mapping each tensor name to {"dtype", "shape", "data_offsets"}
// (plus an optional "__metadata__" object of string -> string), then the
// tensors' bytes, contiguous and little-endian. The writer is deterministic and
// byte-compatible with the reference (Hugging Face) implementation, and
// replaces a file atomically; the reader validates everything strictly and
// refuses any damaged or inconsistent file with a message that names the file
// and says what is wrong. Nothing here knows about networks: callers name the
// tensors and fill in the metadata.
#pragma once

#include "support/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::train {

/// The largest header the reader accepts or the writer produces, in bytes (the
/// reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// Bytes per element of a safetensors dtype ("F32" -> 4, "I64" -> 8, ...), or
/// nullopt when the dtype is unknown or a sub-byte type (F4, F6_*) that netc
/// does not support.
std::optional<size_t> dtypeSize(std::string_view dtype);

/// One named tensor: its dtype (a safetensors dtype name such as "F32"), its
/// shape (row-major; [] is a scalar with one element) and its raw
/// little-endian bytes.
struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  /// The number of elements the shape describes (1 for a scalar), or nullopt
  /// when a dimension is negative or the product overflows.
  std::optional<int64_t> elementCount() const;

  /// A tensor of dtype F32 / F64 / I64 holding `values`; fails when the shape
  /// is invalid or does not have values.size() elements.
  static Expected<Tensor> fromF32(std::string name, std::vector<int64_t> shape,
                                  std::span<const float> values);
  static Expected<Tensor> fromF64(std::string name, std::vector<int64_t> shape,
                                  std::span<const double> values);
  static Expected<Tensor> fromI64(std::string name, std::vector<int64_t> shape,
                                  std::span<const int64_t> values);
  /// A tensor of any supported dtype from raw little-endian bytes; fails when
  /// the dtype is unknown or the byte count does not match shape x dtype.
  static Expected<Tensor> fromBytes(std::string name, std::string dtype, std::vector<int64_t> shape,
                                    std::vector<uint8_t> bytes);

  /// The values, after checking that the dtype is F32 / F64 / I64 and the
  /// shape equals `expectedShape`; the message names the tensor and gives
  /// the expected and the found dtype and shape.
  Expected<std::vector<float>> toF32(const std::vector<int64_t> &expectedShape) const;
  Expected<std::vector<double>> toF64(const std::vector<int64_t> &expectedShape) const;
  Expected<std::vector<int64_t>> toI64(const std::vector<int64_t> &expectedShape) const;
};

/// The contents of one safetensors file: free-form string metadata and the
/// tensors. readSafetensors returns the tensors in file (data offset) order;
/// writeSafetensorsAtomic ignores the order of `tensors` (see there).
struct SafetensorsFile {
  std::map<std::string, std::string, std::less<>> metadata;
  std::vector<Tensor> tensors;

  /// The tensor called `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
  /// The tensor called `name`, or an error saying it is missing.
  Expected<const Tensor *> require(std::string_view name) const;

  /// Sets metadata `key` to `value` (an integer is stored in decimal).
  void setMetadata(std::string key, std::string value);
  void setMetadataInt(std::string key, int64_t value);
  void setMetadataUnsigned(std::string key, uint64_t value);
  /// The metadata value for `key`, or an error saying it is missing.
  Expected<std::string> metadataString(std::string_view key) const;
  /// The metadata value for `key` parsed as a decimal integer (the whole
  /// string, no sign for the unsigned form), or an error saying it is missing
  /// or malformed.
  Expected<int64_t> metadataInt(std::string_view key) const;
  Expected<uint64_t> metadataUnsigned(std::string_view key) const;
};

/// The complete file image of `file`. Deterministic: tensors are ordered by
/// descending dtype rank (8-byte types first, then 4-, 2-, 1-byte ones, in
/// the reference implementation's dtype order), ties by name, so every
/// tensor's data is aligned to its element size; metadata keys are sorted;
/// the JSON is compact and padded with spaces to a multiple of 8 bytes; an
/// empty metadata map writes no "__metadata__". Fails on an empty, duplicate
/// or reserved ("__metadata__") tensor name, an unknown dtype, a bad shape, a
/// byte count that does not match shape x dtype, or text that is not UTF-8.
Expected<std::vector<uint8_t>> serializeSafetensors(const SafetensorsFile &file);

/// Writes `file` (laid out as serializeSafetensors does) to a temporary file
/// next to `path`, flushes it to disk, then renames it over `path`; a crash
/// leaves either the old file or the new one, never a mixture. On failure the
/// temporary file is removed and an existing `path` is untouched; a missing
/// or unwritable directory is reported by name. A new file gets mode 0644; a
/// replaced file keeps its permission bits.
Status writeSafetensorsAtomic(const std::string &path, const SafetensorsFile &file);

/// Reads and validates the safetensors file at `path`: the header length, the
/// JSON (an object; no duplicate keys), every entry's fields and types, known
/// dtypes, non-negative non-overflowing shapes, data offsets that tile the data
/// section exactly (in range, no overlaps, no gaps, sizes matching shape x
/// dtype, no trailing bytes) and string-valued metadata; shapes of more than
/// 1024 dimensions are refused. Allocation follows the file, never a number in
/// it: the header buffer is allocated only once its length is known to fit in
/// the file (and at most kMaxSafetensorsHeaderBytes), the parsed entries are
/// proportional to it, and tensor buffers only after every offset has been
/// checked against the file's size. Tensors are returned in file order.
Expected<SafetensorsFile> readSafetensors(const std::string &path);

/// readSafetensors on an in-memory image; `sourceName` stands for the file
/// name in messages.
Expected<SafetensorsFile> parseSafetensors(std::span<const uint8_t> image, std::string_view sourceName);

} // namespace netc::train
