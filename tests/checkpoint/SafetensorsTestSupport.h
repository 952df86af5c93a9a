// SafetensorsTestSupport.h -- helpers for the safetensors tests: building file
// images by hand (length field + JSON + data), a scratch directory removed at
// the end of each test, and small file utilities.
#pragma once

#include "runtime/train/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace netc::train::test {

/// The 8-byte little-endian length field for `value`.
inline std::vector<uint8_t> lengthField(uint64_t value) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
  return out;
}

/// A file image: the length of `header`, `header` itself (used verbatim, so
/// padding is the caller's), then `data`.
inline std::vector<uint8_t> image(std::string_view header, const std::vector<uint8_t> &data = {}) {
  std::vector<uint8_t> out = lengthField(header.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// The little-endian bytes of `values`.
template <class T> std::vector<uint8_t> bytesOf(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (values.size() > 0)
    std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

/// Concatenation of byte vectors.
inline std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto &part : parts)
    out.insert(out.end(), part.begin(), part.end());
  return out;
}

inline std::vector<uint8_t> readBytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void writeBytes(const std::filesystem::path &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Names of the files in `dir`, sorted.
inline std::vector<std::string> listDir(const std::filesystem::path &dir) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A fixture with a fresh scratch directory, removed (permissions restored)
/// after each test.
class ScratchDir : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "netc-ckpt-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(dir_, ec))
      if (entry.is_directory(ec))
        std::filesystem::permissions(entry.path(), std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

/// A small valid file with metadata and three dtypes (used by the
/// truncation and mutation tests).
inline SafetensorsFile sampleFile() {
  SafetensorsFile file;
  file.setMetadata("netc_version", "0.1.0");
  file.setMetadataInt("epoch", 3);
  std::vector<float> weights = {0.5f, -1.25f, 2.0f, 3.5f, -0.0f, 1e-3f};
  file.tensors.push_back(*Tensor::fromF32("layer.W", {2, 3}, weights));
  std::vector<int64_t> step = {42};
  file.tensors.push_back(*Tensor::fromI64("step", {}, step));
  file.tensors.push_back(*Tensor::fromBytes("mask", "U8", {3}, {1, 0, 1}));
  return file;
}

} // namespace netc::train::test
