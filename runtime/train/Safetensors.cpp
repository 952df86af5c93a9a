// Safetensors.cpp -- the safetensors writer and the Tensor and SafetensorsFile
// helpers (see Safetensors.h). The writer lays the file out exactly as the
// reference implementation does (descending dtype rank, then name; compact
// JSON padded to 8 bytes) and replaces the target atomically: temporary file in
// the same directory, write, fsync, rename, fsync of the directory.
#include "runtime/train/Safetensors.h"

#include "runtime/train/RunFiles.h"
#include "runtime/train/SafetensorsDetail.h"
#include "support/CheckedMath.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace netc::train {
namespace {

struct DtypeInfo {
  std::string_view name;
  size_t size; // bytes per element; 0 for the sub-byte types netc does not support
};

/// The reference implementation's dtypes in its order (ascending alignment);
/// the writer orders tensors by descending index here.
constexpr std::array<DtypeInfo, 22> kDtypes = {
    {{"BOOL", 1},    {"F4", 0},      {"F6_E2M3", 0}, {"F6_E3M2", 0},     {"U8", 1},          {"I8", 1},
     {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"F8_E4M3FNUZ", 1}, {"F8_E5M2FNUZ", 1}, {"I16", 2},
     {"U16", 2},     {"F16", 2},     {"BF16", 2},    {"I32", 4},         {"U32", 4},         {"F32", 4},
     {"C64", 8},     {"F64", 8},     {"I64", 8},     {"U64", 8}}};

} // namespace

namespace detail {

std::optional<size_t> dtypeRank(std::string_view dtype) {
  for (size_t i = 0; i < kDtypes.size(); ++i)
    if (kDtypes[i].name == dtype)
      return i;
  return std::nullopt;
}

/// `text` in single quotes, control and non-ASCII bytes escaped, long text
/// shortened: names from a damaged file may hold anything.
std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + (text.size() > kMaxShown ? "'..." : "'");
}

std::string formatShape(std::span<const int64_t> shape) {
  constexpr size_t kMaxShown = 16;
  std::string out = "[";
  for (size_t i = 0; i < shape.size() && i < kMaxShown; ++i)
    out += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return out + (shape.size() > kMaxShown ? ", ...]" : "]");
}

std::optional<int64_t> elementsOf(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    auto next = dim < 0 ? std::nullopt : checkedMul(count, dim);
    if (!next)
      return std::nullopt;
    count = *next;
  }
  return count;
}

/// The byte size shape x dtype, or an error naming the tensor.
Expected<uint64_t> byteSizeOf(std::string_view name, std::string_view dtype, std::span<const int64_t> shape) {
  auto rank = dtypeRank(dtype);
  if (!rank)
    return fail(fmt::format("tensor {} has unknown dtype {} (expected one of F64, F32, F16, BF16, I64, I32, "
                            "I16, I8, U64, U32, U16, U8, BOOL, C64, F8_*)",
                            quote(name), quote(dtype)));
  if (kDtypes[*rank].size == 0)
    return fail(fmt::format("tensor {} has sub-byte dtype {}, which netc does not support", quote(name),
                            quote(dtype)));
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0)
      return fail(fmt::format("tensor {}: shape[{}] is {}, expected a non-negative integer", quote(name), i,
                              shape[i]));
  auto elements = elementsOf(shape);
  auto bytes = elements ? checkedMul(*elements, static_cast<int64_t>(kDtypes[*rank].size)) : std::nullopt;
  if (!bytes)
    return fail(fmt::format("tensor {}: shape {} of {} overflows (more bytes than fit in 64 bits)",
                            quote(name), formatShape(shape), dtype));
  return static_cast<uint64_t>(*bytes);
}

} // namespace detail

using namespace detail;

namespace {

void appendLittleEndian(std::vector<uint8_t> &out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

struct Prepared {
  std::vector<uint8_t> prefix; // the length field and the padded JSON header
  std::vector<const Tensor *> order;
  uint64_t dataBytes = 0;
};

Expected<Prepared> prepare(const SafetensorsFile &file) {
  Prepared out;
  for (const Tensor &t : file.tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      return fail(fmt::format("cannot write a tensor named {}: the name is {}", quote(t.name),
                              t.name.empty() ? "empty" : "reserved for the metadata"));
    auto bytes = byteSizeOf(t.name, t.dtype, t.shape);
    if (!bytes)
      return bytes.error();
    if (*bytes != t.bytes.size())
      return fail(fmt::format("tensor {} has dtype {} and shape {}, which need {} bytes, but holds {}",
                              quote(t.name), t.dtype, formatShape(t.shape), *bytes, t.bytes.size()));
    out.order.push_back(&t);
  }
  std::sort(out.order.begin(), out.order.end(), [](const Tensor *a, const Tensor *b) {
    auto ra = *dtypeRank(a->dtype), rb = *dtypeRank(b->dtype);
    return ra != rb ? ra > rb : a->name < b->name;
  });
  for (size_t i = 1; i < out.order.size(); ++i)
    if (out.order[i]->name == out.order[i - 1]->name)
      return fail(fmt::format("cannot write two tensors named {}", quote(out.order[i]->name)));

  using Json = nlohmann::ordered_json;
  Json header = Json::object();
  if (!file.metadata.empty()) {
    Json metadata = Json::object();
    for (const auto &[key, value] : file.metadata)
      metadata[key] = value;
    header["__metadata__"] = std::move(metadata);
  }
  for (const Tensor *t : out.order) {
    Json entry = Json::object();
    entry["dtype"] = t->dtype;
    entry["shape"] = t->shape;
    entry["data_offsets"] = Json::array({out.dataBytes, out.dataBytes + t->bytes.size()});
    out.dataBytes += t->bytes.size();
    header[t->name] = std::move(entry);
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception &) {
    return fail("cannot write the checkpoint: a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxSafetensorsHeaderBytes)
    return fail(
        fmt::format("cannot write the checkpoint: its header would be {} bytes, over the {}-byte limit",
                    text.size(), kMaxSafetensorsHeaderBytes));
  appendLittleEndian(out.prefix, text.size());
  out.prefix.insert(out.prefix.end(), text.begin(), text.end());
  return out;
}

/// Writes all of `data`; 0 or the errno of the failure.
int writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno;
    if (n == 0)
      return EIO;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

template <class T>
Expected<Tensor> makeTensor(std::string name, std::string_view dtype, std::vector<int64_t> shape,
                            std::span<const T> values) {
  auto size = byteSizeOf(name, dtype, shape);
  if (!size)
    return size.error();
  if (*size != values.size_bytes())
    return fail(fmt::format("tensor {}: shape {} has {} elements, but {} values were given", quote(name),
                            formatShape(shape), *size / sizeof(T), values.size()));
  Tensor t{std::move(name), std::string(dtype), std::move(shape), std::vector<uint8_t>(values.size_bytes())};
  if (!values.empty())
    std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
  return t;
}

template <class T>
Expected<std::vector<T>> viewAs(const Tensor &t, std::string_view dtype, const std::vector<int64_t> &shape) {
  if (t.dtype != dtype || t.shape != shape)
    return fail(fmt::format("tensor {}: expected dtype {} with shape {}, found {} with shape {}",
                            quote(t.name), dtype, formatShape(shape), quote(t.dtype), formatShape(t.shape)));
  auto size = byteSizeOf(t.name, dtype, shape);
  if (!size)
    return size.error();
  if (*size != t.bytes.size())
    return fail(fmt::format("tensor {} has dtype {} and shape {}, which need {} bytes, but holds {}",
                            quote(t.name), dtype, formatShape(shape), *size, t.bytes.size()));
  std::vector<T> values(t.bytes.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), t.bytes.data(), t.bytes.size());
  return values;
}

} // namespace

std::optional<size_t> dtypeSize(std::string_view dtype) {
  auto rank = dtypeRank(dtype);
  if (!rank || kDtypes[*rank].size == 0)
    return std::nullopt;
  return kDtypes[*rank].size;
}

std::optional<int64_t> Tensor::elementCount() const {
  return elementsOf(shape);
}

Expected<Tensor> Tensor::fromF32(std::string name, std::vector<int64_t> shape,
                                 std::span<const float> values) {
  return makeTensor(std::move(name), "F32", std::move(shape), values);
}
Expected<Tensor> Tensor::fromF64(std::string name, std::vector<int64_t> shape,
                                 std::span<const double> values) {
  return makeTensor(std::move(name), "F64", std::move(shape), values);
}
Expected<Tensor> Tensor::fromI64(std::string name, std::vector<int64_t> shape,
                                 std::span<const int64_t> values) {
  return makeTensor(std::move(name), "I64", std::move(shape), values);
}
Expected<Tensor> Tensor::fromBytes(std::string name, std::string dtype, std::vector<int64_t> shape,
                                   std::vector<uint8_t> bytes) {
  auto size = byteSizeOf(name, dtype, shape);
  if (!size)
    return size.error();
  if (*size != bytes.size())
    return fail(fmt::format("tensor {} has dtype {} and shape {}, which need {} bytes, but {} were given",
                            quote(name), dtype, formatShape(shape), *size, bytes.size()));
  return Tensor{std::move(name), std::move(dtype), std::move(shape), std::move(bytes)};
}

Expected<std::vector<float>> Tensor::toF32(const std::vector<int64_t> &expectedShape) const {
  return viewAs<float>(*this, "F32", expectedShape);
}
Expected<std::vector<double>> Tensor::toF64(const std::vector<int64_t> &expectedShape) const {
  return viewAs<double>(*this, "F64", expectedShape);
}
Expected<std::vector<int64_t>> Tensor::toI64(const std::vector<int64_t> &expectedShape) const {
  return viewAs<int64_t>(*this, "I64", expectedShape);
}

const Tensor *SafetensorsFile::find(std::string_view name) const {
  for (const Tensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

Expected<const Tensor *> SafetensorsFile::require(std::string_view name) const {
  if (const Tensor *t = find(name))
    return t;
  return fail(fmt::format("no tensor named {} (the file has {} tensors)", quote(name), tensors.size()));
}

void SafetensorsFile::setMetadata(std::string key, std::string value) {
  metadata.insert_or_assign(std::move(key), std::move(value));
}
void SafetensorsFile::setMetadataInt(std::string key, int64_t value) {
  setMetadata(std::move(key), std::to_string(value));
}
void SafetensorsFile::setMetadataUnsigned(std::string key, uint64_t value) {
  setMetadata(std::move(key), std::to_string(value));
}

Expected<std::string> SafetensorsFile::metadataString(std::string_view key) const {
  auto it = metadata.find(key);
  if (it == metadata.end())
    return fail(fmt::format("metadata has no key {}", quote(key)));
  return it->second;
}

namespace {
template <class T> Expected<T> parseMetadataNumber(const SafetensorsFile &file, std::string_view key) {
  auto text = file.metadataString(key);
  if (!text)
    return text.error();
  T value{};
  const char *first = text->data(), *last = first + text->size();
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last)
    return fail(fmt::format("metadata {} is {}, expected a{} integer", quote(key), quote(*text),
                            std::is_unsigned_v<T> ? " non-negative 64-bit" : " 64-bit"));
  return value;
}
} // namespace

Expected<int64_t> SafetensorsFile::metadataInt(std::string_view key) const {
  return parseMetadataNumber<int64_t>(*this, key);
}
Expected<uint64_t> SafetensorsFile::metadataUnsigned(std::string_view key) const {
  return parseMetadataNumber<uint64_t>(*this, key);
}

Expected<std::vector<uint8_t>> serializeSafetensors(const SafetensorsFile &file) {
  auto prepared = prepare(file);
  if (!prepared)
    return prepared.error();
  std::vector<uint8_t> image = std::move(prepared->prefix);
  image.reserve(image.size() + prepared->dataBytes);
  for (const Tensor *t : prepared->order)
    image.insert(image.end(), t->bytes.begin(), t->bytes.end());
  return image;
}

Status writeSafetensorsAtomic(const std::string &path, const SafetensorsFile &file) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).filename().empty())
    return fail(fmt::format("cannot write checkpoint {}: the path names no file", quote(path)));
  auto prepared = prepare(file);
  if (!prepared)
    return fail(fmt::format("{}: {}", path, prepared.message()));
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty())
    dir = ".";

  // "<path>.tmp-<pid>-XXXXXX" (RunFiles.h): a later run removes it only once
  // this process is gone; until then a signal handler may remove it.
  std::string tempPath = temporaryTemplate(path);
  int fd = ::mkostemp(tempPath.data(), O_CLOEXEC);
  std::optional<TemporaryRegistration> registration;
  if (fd >= 0)
    registration.emplace(tempPath);
  if (fd < 0) {
    int error = errno;
    if (error == ENOENT)
      return fail(fmt::format("cannot write checkpoint {}: directory {} does not exist (create it first)",
                              path, quote(dir)));
    if (error == ENOTDIR)
      return fail(fmt::format("cannot write checkpoint {}: {} is not a directory", path, quote(dir)));
    if (error == EACCES || error == EPERM || error == EROFS)
      return fail(fmt::format("cannot write checkpoint {}: directory {} is not writable ({})", path,
                              quote(dir), errnoText(error)));
    return fail(fmt::format("cannot write checkpoint {}: cannot create a temporary file in {} ({})", path,
                            quote(dir), errnoText(error)));
  }
  // On any failure below: close and remove the temporary file; `path` is untouched.
  auto abandon = [&](const std::string &what, int error) {
    if (fd >= 0)
      ::close(fd);
    ::unlink(tempPath.c_str());
    return fail(
        fmt::format("cannot write checkpoint {}: {} failed ({}); the previous file, if any, is unchanged",
                    path, what, errnoText(error)));
  };
  const std::string temp = quote(tempPath);
  struct stat old {};
  mode_t mode = (::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode)) ? (old.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) {
    int error = errno;
    return abandon("setting the permissions of " + temp, error);
  }
  if (int error = writeAll(fd, prepared->prefix.data(), prepared->prefix.size()))
    return abandon("writing " + temp, error);
  for (const Tensor *t : prepared->order)
    if (int error = writeAll(fd, t->bytes.data(), t->bytes.size()))
      return abandon("writing " + temp, error);
  if (::fsync(fd) != 0) {
    int error = errno;
    return abandon("flushing " + temp + " to disk", error);
  }
  int closed = ::close(fd);
  int closeError = errno;
  fd = -1;
  if (closed != 0)
    return abandon("closing " + temp, closeError);
  if (::rename(tempPath.c_str(), path.c_str()) != 0) {
    int error = errno;
    return abandon("renaming " + temp + " over it", error);
  }
  // Make the rename itself durable; a failure here leaves a complete new file.
  if (int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dirFd >= 0) {
    (void)::fsync(dirFd);
    ::close(dirFd);
  }
  return Status::success();
}

} // namespace netc::train
