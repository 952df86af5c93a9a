// Idx.cpp -- the IDX reader (see Idx.h). Every file goes through zlib's gz*
// interface, which reads gzip streams and, transparently, raw files, so a
// file is recognised by its content. The header is checked before anything
// is allocated: a raw file's claimed size must equal its real size; a gzip
// file's must be one its compressed size can hold (deflate expands at most
// 1032:1); and the data, as bytes and as the floats they become, must fit
// the memory limit. A gzip stream is then inflated in bounded chunks into
// memory reserved once, so a lying header costs no more than the data that
// really arrives.
#include "runtime/data/Idx.h"

#include "support/ByteSize.h"
#include "support/CheckedMath.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

namespace netc::data {
namespace {

namespace fs = std::filesystem;

struct GzCloser {
  void operator()(gzFile file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

/// The largest single gzread request (its length parameter is unsigned).
constexpr size_t kReadChunk = size_t{1} << 20;

/// The most bytes deflate can expand one byte of compressed data into: a
/// 258-byte match coded in 2 bits (zlib's documented 1032:1).
constexpr uint64_t kMaxDeflateRatio = 1032;

/// What an element costs once loaded: its byte, then the float it becomes.
constexpr uint64_t kLoadedBytesPerElement = 1 + sizeof(float);

/// How much of a gzip stream is inflated at a time.
constexpr size_t kInflateChunk = size_t{4} << 20;

std::string describeMagic(uint32_t magic) {
  uint32_t rank = magic & 0xff;
  const char *type = "unsigned bytes";
  switch ((magic >> 8) & 0xff) {
  case 0x08: type = "unsigned bytes"; break;
  case 0x09: type = "signed bytes"; break;
  case 0x0B: type = "16-bit integers"; break;
  case 0x0C: type = "32-bit integers"; break;
  case 0x0D: type = "32-bit floats"; break;
  case 0x0E: type = "64-bit floats"; break;
  default: return "not an IDX magic number";
  }
  if (magic >> 16)
    return "not an IDX magic number";
  return fmt::format("{}, {} dimension{}", type, rank, rank == 1 ? "" : "s");
}

std::string describeDims(const std::vector<int64_t> &dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i)
    text += fmt::format("{}{}", i ? " x " : "", dims[i]);
  return text;
}

/// An open IDX file (raw or gzip) and how far it has been read.
class Reader {
public:
  Reader(std::string path, GzFile file) : path_(std::move(path)), file_(std::move(file)) {}

  /// Reads up to `size` bytes; fewer only at the end of the data (or where a
  /// gzip stream is cut short, which cutShort() then says).
  Expected<size_t> read(uint8_t *dst, size_t size) {
    size_t done = 0;
    while (done < size) {
      size_t want = std::min(size - done, kReadChunk);
      int got = gzread(file_.get(), dst + done, static_cast<unsigned>(want));
      int errnum = Z_OK;
      gzerror(file_.get(), &errnum);
      if (got < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
        if (errnum == Z_ERRNO)
          return fail(fmt::format("{}: cannot read: {}", path_, gzError()));
        return fail(fmt::format("{}: corrupt gzip data ({}); re-download it", path_, gzError()));
      }
      done += static_cast<size_t>(got);
      if (static_cast<size_t>(got) < want) {
        cutShort_ = errnum == Z_BUF_ERROR;
        break;
      }
    }
    offset_ += done;
    return done;
  }

  /// Whether the data ended because the gzip stream stops mid-way.
  bool cutShort() const { return cutShort_; }

private:
  /// zlib's message for the last error, without the path it prefixes.
  std::string gzError() {
    int errnum = Z_OK;
    const char *message = gzerror(file_.get(), &errnum);
    if (errnum == Z_ERRNO)
      return std::strerror(errno);
    std::string text = message && *message ? message : "unknown zlib error";
    if (text.starts_with(path_ + ": "))
      text.erase(0, path_.size() + 2);
    return text;
  }

  std::string path_;
  GzFile file_;
  uint64_t offset_ = 0;
  bool cutShort_ = false;
};

uint32_t bigEndian32(const uint8_t *p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

/// Whether the file starts like a gzip stream.
bool startsLikeGzip(const std::string &path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  unsigned char head[2] = {0, 0};
  return file && std::fread(head, 1, 2, file.get()) == 2 && head[0] == 0x1f && head[1] == 0x8b;
}

std::string truncatedMessage(const std::string &path, bool compressed, bool cutShort,
                             const std::vector<int64_t> &dims, uint64_t expected, uint64_t found) {
  std::string claim = dims.empty() ? "an IDX header" : fmt::format("the header ({})", describeDims(dims));
  if (!compressed)
    return fmt::format(
        "{}: truncated: {} needs {} bytes but the file has {} bytes; re-download or re-extract it", path,
        claim, expected, found);
  return fmt::format("{}: truncated: {} needs {} bytes after decompression but the file decompresses to {} "
                     "bytes{}; re-download it",
                     path, claim, expected, found, cutShort ? " (the gzip stream itself is cut short)" : "");
}

} // namespace

Expected<IdxArray> readIdxFile(const std::string &path, uint32_t expectedMagic, uint64_t memoryLimit) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    return fail(fmt::format("{}: no such file", path));
  if (!fs::is_regular_file(status))
    return fail(fmt::format("{}: not a regular file", path));
  uint64_t fileSize = fs::file_size(path, ec);
  if (ec)
    return fail(fmt::format("{}: cannot read its size: {}", path, ec.message()));

  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file)
    return fail(fmt::format("{}: cannot open: {}", path, errno ? std::strerror(errno) : "out of memory"));
  gzbuffer(file.get(), 1 << 18);
  Reader reader(path, std::move(file));
  const bool compressed = startsLikeGzip(path);

  uint8_t word[4];
  Expected<size_t> got = reader.read(word, 4);
  if (!got)
    return got.error();
  if (*got < 4)
    return fail(truncatedMessage(path, compressed, reader.cutShort(), {}, 4, *got));
  uint32_t magic = bigEndian32(word);
  if (magic != expectedMagic) {
    std::string hint;
    if (magic == kIdxLabelsMagic && expectedMagic == kIdxImagesMagic)
      hint = " (this looks like a labels file)";
    else if (magic == kIdxImagesMagic && expectedMagic == kIdxLabelsMagic)
      hint = " (this looks like an images file)";
    return fail(fmt::format("{}: wrong magic number 0x{:08x} ({}), expected 0x{:08x} ({}){}", path, magic,
                            describeMagic(magic), expectedMagic, describeMagic(expectedMagic), hint));
  }

  const size_t rank = expectedMagic & 0xff;
  const uint64_t headerBytes = 4 + 4 * rank;
  std::vector<uint8_t> dimBytes(4 * rank);
  got = reader.read(dimBytes.data(), dimBytes.size());
  if (!got)
    return got.error();
  if (*got < dimBytes.size())
    return fail(truncatedMessage(path, compressed, reader.cutShort(), {}, headerBytes, 4 + *got));

  IdxArray array;
  int64_t payload = 1;
  for (size_t d = 0; d < rank; ++d) {
    uint32_t dim = bigEndian32(&dimBytes[4 * d]);
    array.dims.push_back(dim);
    if (dim == 0)
      return fail(fmt::format("{}: dimension {} of the header ({}) is 0; expected at least 1", path, d,
                              describeDims(array.dims)));
    std::optional<int64_t> product = checkedMul(payload, dim);
    if (!product)
      return fail(fmt::format("{}: the header's dimensions overflow a 64-bit size", path));
    payload = *product;
  }
  const uint64_t expected = headerBytes + static_cast<uint64_t>(payload);

  if (!compressed && fileSize < expected)
    return fail(truncatedMessage(path, false, reader.cutShort(), array.dims, expected, fileSize));
  if (!compressed && fileSize > expected)
    return fail(
        fmt::format("{}: {} bytes after the {} the header ({}) accounts for; expected exactly {} bytes", path,
                    fileSize - expected, expected, describeDims(array.dims), expected));
  // A gzip file cannot hold more than its size times deflate's ratio: refuse
  // a bigger claim before inflating anything.
  if (compressed && fileSize <= UINT64_MAX / kMaxDeflateRatio && expected > fileSize * kMaxDeflateRatio)
    return fail(fmt::format("{}: truncated: the header ({}) needs {} bytes after decompression but a gzip "
                            "file of {} bytes decompresses to at most {} (deflate expands at most {}:1); "
                            "re-download it",
                            path, describeDims(array.dims), expected, fileSize, fileSize * kMaxDeflateRatio,
                            kMaxDeflateRatio));
  // Each element is held as a byte and then as the float it becomes.
  const uint64_t limit = memoryLimit ? memoryLimit : machineMemoryBytes();
  if (static_cast<uint64_t>(payload) > limit / kLoadedBytesPerElement)
    return fail(fmt::format("{}: the header ({}) declares {} elements, {} once read and converted to floats; "
                            "that is more than the memory limit of {}; use a smaller file{}",
                            path, describeDims(array.dims), payload,
                            byteSizeText(static_cast<uint64_t>(payload) * kLoadedBytesPerElement),
                            byteSizeText(limit), memoryLimit ? "" : " or a machine with more memory"));

  if (!compressed) {
    array.bytes.resize(static_cast<size_t>(payload));
    got = reader.read(array.bytes.data(), array.bytes.size());
    if (!got)
      return got.error();
    if (*got < array.bytes.size())
      return fail(truncatedMessage(path, false, reader.cutShort(), array.dims, expected, headerBytes + *got));
    return array;
  }

  // A gzip stream's length is unknown until it is read: reserve the claimed
  // size once (address space, not memory, until it is written) and inflate
  // into it chunk by chunk, so memory grows only with the data that arrives.
  array.bytes.reserve(static_cast<size_t>(payload));
  size_t filled = 0;
  while (filled < static_cast<size_t>(payload)) {
    size_t step = std::min(static_cast<size_t>(payload) - filled, kInflateChunk);
    array.bytes.resize(filled + step);
    got = reader.read(array.bytes.data() + filled, step);
    if (!got)
      return got.error();
    filled += *got;
    if (*got < step)
      return fail(
          truncatedMessage(path, true, reader.cutShort(), array.dims, expected, headerBytes + filled));
  }
  uint8_t extra;
  got = reader.read(&extra, 1);
  if (!got)
    return got.error();
  if (*got != 0)
    return fail(
        fmt::format("{}: the decompressed data continues past the {} bytes the header ({}) accounts for",
                    path, expected, describeDims(array.dims)));
  return array;
}

Expected<Dataset> loadIdx(const std::string &imagesPath, const std::string &labelsPath,
                          uint64_t memoryLimit) {
  Expected<IdxArray> labels = readIdxFile(labelsPath, kIdxLabelsMagic, memoryLimit);
  if (!labels)
    return labels.error();
  Expected<IdxArray> images = readIdxFile(imagesPath, kIdxImagesMagic, memoryLimit);
  if (!images)
    return images.error();
  if (images->dims[0] != labels->dims[0])
    return fail(fmt::format("{} has {} images but {} has {} labels; expected the same number", imagesPath,
                            images->dims[0], labelsPath, labels->dims[0]));

  Dataset data;
  data.origin = imagesPath;
  data.labelsOrigin = labelsPath;
  data.count = images->dims[0];
  data.sampleShape.assign(images->dims.begin() + 1, images->dims.end());
  data.featureCount = 1;
  for (int64_t d : data.sampleShape)
    data.featureCount *= d;
  data.features.assign(images->bytes.begin(), images->bytes.end());
  images->bytes = {}; // release before the labels are converted
  data.labels.assign(labels->bytes.begin(), labels->bytes.end());
  computeLabelInfo(data);
  return data;
}

std::string findIdxFile(const std::string &dir, const std::string &baseName) {
  std::error_code ec;
  for (const char *suffix : {"", ".gz"}) {
    fs::path candidate = fs::path(dir) / (baseName + suffix);
    if (fs::is_regular_file(candidate, ec))
      return candidate.string();
  }
  return {};
}

} // namespace netc::data
