// DataTestSupport.h -- helpers shared by the data-loading tests: a fresh
// temporary folder per test, writing raw or gzipped files, building IDX
// headers and files byte by byte, and the paths of the committed fixtures.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace netc::data::testing {

using Bytes = std::vector<uint8_t>;

/// The committed slice of real MNIST digits.
inline std::string sliceDir() {
  return std::string(NETC_SOURCE_DIR) + "/tests/fixtures/mnist-slice";
}

/// A temporary folder named after the running test, removed at the end.
class TempFolder {
public:
  TempFolder() {
    const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        std::filesystem::path(::testing::TempDir()) / ("netc-data-" + std::string(info->test_suite_name()) +
                                                       "-" + info->name() + "-" + std::to_string(getpid()));
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempFolder(const TempFolder &) = delete;
  TempFolder &operator=(const TempFolder &) = delete;

  std::string dir() const { return path_.string(); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

inline void writeBytes(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline void writeText(const std::string &path, const std::string &text) {
  writeBytes(path, Bytes(text.begin(), text.end()));
}

inline void writeGzip(const std::string &path, const Bytes &bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << "cannot write " << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

inline Bytes readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void appendBigEndian(Bytes &bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8)
    bytes.push_back(static_cast<uint8_t>(value >> shift));
}

/// An IDX header: magic and dimensions.
inline Bytes idxHeader(uint32_t magic, const std::vector<uint32_t> &dims) {
  Bytes bytes;
  appendBigEndian(bytes, magic);
  for (uint32_t d : dims)
    appendBigEndian(bytes, d);
  return bytes;
}

/// An images file of `count` rows×cols images whose pixel k of image i is
/// (i * 7 + k) % 256.
inline Bytes idxImages(uint32_t count, uint32_t rows = 4, uint32_t cols = 3) {
  Bytes bytes = idxHeader(0x00000803, {count, rows, cols});
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t k = 0; k < rows * cols; ++k)
      bytes.push_back(static_cast<uint8_t>((i * 7 + k) % 256));
  return bytes;
}

/// A labels file of `count` labels i % 10.
inline Bytes idxLabels(uint32_t count) {
  Bytes bytes = idxHeader(0x00000801, {count});
  for (uint32_t i = 0; i < count; ++i)
    bytes.push_back(static_cast<uint8_t>(i % 10));
  return bytes;
}

} // namespace netc::data::testing
