// SafetensorsReader.cpp -- the safetensors reader (see Safetensors.h). The
// header is parsed with nlohmann's SAX interface straight into entries, so no
// JSON tree is built, nesting and value kinds are checked as they arrive, and
// memory stays proportional to the header; the data section is then checked to
// be tiled exactly by the entries before a byte of tensor data is read, and
// each tensor is read into a buffer no larger than the file.
#include "runtime/train/Safetensors.h"

#include "runtime/train/SafetensorsDetail.h"
#include "support/InputFile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace netc::train {
using namespace detail;
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this host needs byte swapping added");

/// The largest shape rank accepted (a sanity limit; the format has none).
constexpr size_t kMaxRank = 1024;

uint64_t loadLittleEndian(const uint8_t *bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

/// One header entry as read, before the offsets are checked.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t offsets[2] = {0, 0};
};

/// Builds entries and metadata from SAX events, refusing anything but
/// {name: {"dtype": s, "shape": [u...], "data_offsets": [u, u]}, "__metadata__": {s: s}}.
class HeaderParser final : public nlohmann::json_sax<nlohmann::json> {
public:
  std::vector<Entry> entries;
  std::map<std::string, std::string, std::less<>> metadata;
  std::string error;

  bool null() override { return wrongValue("null"); }
  bool boolean(bool value) override { return wrongValue(value ? "true" : "false"); }
  bool number_integer(number_integer_t value) override { return wrongValue(std::to_string(value)); }
  bool number_float(number_float_t, const string_t &text) override { return wrongValue(text); }
  bool binary(binary_t &) override { return wrongValue("binary data"); }
  bool number_unsigned(number_unsigned_t value) override {
    if (where_ == Where::Shape && value <= static_cast<uint64_t>(INT64_MAX) &&
        current_.shape.size() < kMaxRank) {
      current_.shape.push_back(static_cast<int64_t>(value));
      return true;
    }
    if (where_ == Where::Shape)
      return refuse(
          current_.shape.size() >= kMaxRank
              ? fmt::format("tensor {}: shape has more than {} dimensions", quote(current_.name), kMaxRank)
              : fmt::format("tensor {}: shape[{}] is {}, which overflows", quote(current_.name),
                            current_.shape.size(), value));
    if (where_ == Where::Offsets && offsetCount_ < 2) {
      current_.offsets[offsetCount_++] = value;
      return true;
    }
    return wrongValue(std::to_string(value));
  }
  bool string(string_t &value) override {
    if (where_ == Where::Entry && field_ == "dtype") {
      current_.dtype = std::move(value);
      return true;
    }
    if (where_ == Where::Metadata) {
      if (!metadata.try_emplace(metadataKey_, std::move(value)).second)
        return refuse(fmt::format("__metadata__ has key {} twice", quote(metadataKey_)));
      return true;
    }
    return wrongValue("a string");
  }
  bool start_object(std::size_t) override {
    if (where_ == Where::Start)
      where_ = Where::Root;
    else if (where_ == Where::Root && rootKey_ == "__metadata__" && !sawMetadata_)
      where_ = Where::Metadata, sawMetadata_ = true;
    else if (where_ == Where::Root && rootKey_ == "__metadata__")
      return refuse("the header has two __metadata__ objects");
    else if (where_ == Where::Root)
      where_ = Where::Entry, current_ = Entry{std::move(rootKey_), {}, {}, {0, 0}}, seen_ = 0;
    else
      return wrongValue("an object");
    return true;
  }
  bool key(string_t &value) override {
    if (where_ == Where::Root)
      rootKey_ = std::move(value);
    else if (where_ == Where::Metadata)
      metadataKey_ = std::move(value);
    else if (where_ == Where::Entry) {
      static constexpr std::array<std::string_view, 3> kFields = {"dtype", "shape", "data_offsets"};
      auto it = std::find(kFields.begin(), kFields.end(), value);
      if (it == kFields.end())
        return refuse(
            fmt::format("tensor {} has unknown field {} (expected only dtype, shape and data_offsets)",
                        quote(current_.name), quote(value)));
      unsigned bit = 1u << (it - kFields.begin());
      if (seen_ & bit)
        return refuse(fmt::format("tensor {} has field '{}' twice", quote(current_.name), *it));
      seen_ |= bit;
      field_ = *it;
    }
    return true;
  }
  bool end_object() override {
    if (where_ == Where::Entry) {
      for (auto [bit, name] : {std::pair{1u, "dtype"}, std::pair{2u, "shape"}, std::pair{4u, "data_offsets"}})
        if (!(seen_ & bit))
          return refuse(fmt::format("tensor {} is missing field '{}'", quote(current_.name), name));
      entries.push_back(std::move(current_));
    }
    where_ = where_ == Where::Root ? Where::Done : Where::Root;
    return true;
  }
  bool start_array(std::size_t) override {
    if (where_ == Where::Entry && field_ == "shape")
      where_ = Where::Shape;
    else if (where_ == Where::Entry && field_ == "data_offsets")
      where_ = Where::Offsets, offsetCount_ = 0;
    else
      return wrongValue("an array");
    return true;
  }
  bool end_array() override {
    if (where_ == Where::Offsets && offsetCount_ != 2)
      return refuse(fmt::format("tensor {}: data_offsets has {} element{}, expected two [begin, end]",
                                quote(current_.name), offsetCount_, offsetCount_ == 1 ? "" : "s"));
    where_ = Where::Entry;
    return true;
  }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &ex) override {
    std::string_view what = ex.what();
    if (auto close = what.find("] "); close != std::string_view::npos)
      what.remove_prefix(close + 2);
    std::string clean;
    for (char c : what.substr(0, 300))
      clean += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) ? '?' : c;
    return refuse("the header is not valid JSON: " + clean);
  }

private:
  enum class Where { Start, Root, Metadata, Entry, Shape, Offsets, Done };
  Where where_ = Where::Start;
  std::string rootKey_, metadataKey_;
  std::string_view field_;
  Entry current_;
  unsigned seen_ = 0;
  unsigned offsetCount_ = 0;
  bool sawMetadata_ = false;

  bool refuse(std::string message) {
    error = std::move(message);
    return false;
  }
  /// A value of the wrong kind (`found`) where the current position wants another.
  bool wrongValue(std::string found) {
    std::string name = quote(current_.name);
    switch (where_) {
    case Where::Root:
      if (rootKey_ == "__metadata__")
        return refuse(
            fmt::format("__metadata__ is {}, expected an object mapping strings to strings", found));
      return refuse(fmt::format("entry {} is {}, expected an object with dtype, shape and data_offsets",
                                quote(rootKey_), found));
    case Where::Metadata:
      return refuse(
          fmt::format("__metadata__ value for {} is {}, expected a string", quote(metadataKey_), found));
    case Where::Shape:
      return refuse(fmt::format("tensor {}: shape[{}] is {}, expected a non-negative integer", name,
                                current_.shape.size(), found));
    case Where::Offsets:
      return refuse(offsetCount_ >= 2
                        ? fmt::format("tensor {}: data_offsets has more than two elements", name)
                        : fmt::format("tensor {}: data_offsets[{}] is {}, expected a non-negative integer",
                                      name, offsetCount_, found));
    case Where::Entry:
      return refuse(fmt::format("tensor {}: field '{}' is {}, expected {}", name, field_, found,
                                field_ == "dtype"   ? "a string"
                                : field_ == "shape" ? "an array of non-negative integers"
                                                    : "an array of two non-negative integers [begin, end]"));
    default: return refuse(fmt::format("found {} where the header's top-level object was expected", found));
    }
  }
};

using ReadAt = std::function<bool(uint64_t offset, uint8_t *out, size_t size)>;

/// Validates and loads a safetensors image of `fileSize` bytes read through
/// `readAt`; messages start with `source`.
Expected<SafetensorsFile> parseImage(uint64_t fileSize, const ReadAt &readAt, std::string_view source) {
  auto refuse = [&](const std::string &what) { return fail(fmt::format("{}: {}", source, what)); };
  const std::string readError = "could not read the file (it changed or an I/O error occurred while reading)";
  if (fileSize < 8)
    return refuse(
        fmt::format("the file is {} bytes long, shorter than the 8-byte header length that starts a "
                    "safetensors file (it is truncated or not a safetensors file)",
                    fileSize));
  uint8_t lengthField[8];
  if (!readAt(0, lengthField, 8))
    return refuse(readError);
  uint64_t headerBytes = loadLittleEndian(lengthField);
  if (headerBytes > kMaxSafetensorsHeaderBytes)
    return refuse(fmt::format("header length {} exceeds the {}-byte limit (the file is damaged or not a "
                              "safetensors file)",
                              headerBytes, kMaxSafetensorsHeaderBytes));
  if (headerBytes > fileSize - 8)
    return refuse(
        fmt::format("header length {} exceeds the {} bytes that follow the length field (the file is "
                    "truncated or not a safetensors file)",
                    headerBytes, fileSize - 8));
  std::string header(headerBytes, '\0');
  if (headerBytes > 0 && !readAt(8, reinterpret_cast<uint8_t *>(header.data()), headerBytes))
    return refuse(readError);
  if (header.empty() || header[0] != '{')
    return refuse("the header does not start with '{' (expected a JSON object)");
  // nlohmann's lexer takes a NUL byte for the end of input and would ignore
  // whatever follows it; valid JSON never contains one.
  if (auto nul = header.find('\0'); nul != std::string::npos)
    return refuse(fmt::format("the header is not valid JSON: it contains a NUL byte at offset {}", nul));

  HeaderParser parser;
  bool parsed = false;
  try {
    parsed = nlohmann::json::sax_parse(header.begin(), header.end(), &parser);
  } catch (const nlohmann::json::exception &ex) {
    return refuse(fmt::format("the header could not be parsed ({})", ex.id));
  }
  if (!parsed)
    return refuse(parser.error.empty() ? "the header is not valid JSON" : parser.error);
  header = std::string(); // release it before the data are read

  std::vector<Entry> &entries = parser.entries;
  {
    std::vector<const Entry *> byName;
    for (const Entry &e : entries)
      byName.push_back(&e);
    std::sort(byName.begin(), byName.end(), [](auto *a, auto *b) { return a->name < b->name; });
    for (size_t i = 1; i < byName.size(); ++i)
      if (byName[i]->name == byName[i - 1]->name)
        return refuse(fmt::format("the header lists tensor {} twice", quote(byName[i]->name)));
  }
  const uint64_t dataBytes = fileSize - 8 - headerBytes;
  for (const Entry &e : entries) {
    auto size = byteSizeOf(e.name, e.dtype, e.shape);
    if (!size)
      return refuse(size.message());
    auto [begin, end] = std::pair(e.offsets[0], e.offsets[1]);
    if (begin > end)
      return refuse(
          fmt::format("tensor {}: data_offsets [{}, {}] end before they begin", quote(e.name), begin, end));
    if (end > dataBytes)
      return refuse(fmt::format("tensor {}: data_offsets [{}, {}] reach past the end of the data section ({} "
                                "bytes; the file is truncated or its header is wrong)",
                                quote(e.name), begin, end, dataBytes));
    if (end - begin != *size)
      return refuse(
          fmt::format("tensor {} has dtype {} and shape {}, which need {} bytes, but its data_offsets "
                      "[{}, {}] span {}",
                      quote(e.name), e.dtype, formatShape(e.shape), *size, begin, end, end - begin));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return std::tie(a.offsets[0], a.offsets[1], a.name) < std::tie(b.offsets[0], b.offsets[1], b.name);
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry &e = entries[i];
    if (e.offsets[0] < covered)
      return refuse(
          fmt::format("tensors {} and {} overlap: {} begins at byte {} of the data section but {} ends at "
                      "byte {}",
                      quote(entries[i - 1].name), quote(e.name), quote(e.name), e.offsets[0],
                      quote(entries[i - 1].name), covered));
    if (e.offsets[0] > covered)
      return refuse(
          fmt::format("gap in the data section: bytes [{}, {}) before tensor {} belong to no tensor", covered,
                      e.offsets[0], quote(e.name)));
    covered = e.offsets[1];
  }
  if (covered != dataBytes)
    return refuse(
        fmt::format("{} trailing bytes after the last tensor's data (the data section is {} bytes, the "
                    "header describes {}; the file is damaged)",
                    dataBytes - covered, dataBytes, covered));

  SafetensorsFile result;
  result.metadata = std::move(parser.metadata);
  result.tensors.reserve(entries.size());
  for (Entry &e : entries) {
    Tensor t{std::move(e.name), std::move(e.dtype), std::move(e.shape), {}};
    t.bytes.resize(e.offsets[1] - e.offsets[0]);
    if (!t.bytes.empty() && !readAt(8 + headerBytes + e.offsets[0], t.bytes.data(), t.bytes.size()))
      return refuse(readError);
    result.tensors.push_back(std::move(t));
  }
  return result;
}

} // namespace

Expected<SafetensorsFile> readSafetensors(const std::string &path) {
  int fd = openForReading(path); // never blocks on a FIFO: it is refused below as not a regular file
  if (fd < 0) {
    int error = errno;
    return fail(error == ENOENT ? fmt::format("{}: no such file", path)
                                : fmt::format("{}: cannot open it ({})", path, errnoText(error)));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return fail(fmt::format("{}: not a regular file", path));
  }
  ReadAt readAt = [fd](uint64_t offset, uint8_t *out, size_t size) {
    while (size > 0) {
      ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      out += n;
      offset += static_cast<uint64_t>(n);
      size -= static_cast<size_t>(n);
    }
    return true;
  };
  auto result = parseImage(static_cast<uint64_t>(info.st_size), readAt, path);
  ::close(fd);
  return result;
}

Expected<SafetensorsFile> parseSafetensors(std::span<const uint8_t> image, std::string_view sourceName) {
  ReadAt readAt = [image](uint64_t offset, uint8_t *out, size_t size) {
    if (offset > image.size() || size > image.size() - offset)
      return false;
    std::memcpy(out, image.data() + offset, size);
    return true;
  };
  return parseImage(image.size(), readAt, sourceName);
}

} // namespace netc::train
