// E2ESupport.h -- helpers shared by the end-to-end training tests: paths of
// the examples and the committed digit slice, a fresh temporary folder per
// test, an independent safetensors reader (so checkpoints are compared by
// their tensors' bytes, not through netc's own reader), an IDX reader and
// writer, the metrics file as JSON, and the training settings the tests use.
#pragma once

#include "netc/Training.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

/// Expects `part` somewhere in `text`, and shows both when it is not.
#define EXPECT_CONTAINS(text, part)                                                                          \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "expected '" << (part) << "' in:\n" << (text)

namespace netc::e2e {

using Bytes = std::vector<uint8_t>;

inline std::string sourcePath(const std::string &relative) {
  return std::string(NETC_SOURCE_DIR) + "/" + relative;
}
/// The committed slice of real MNIST digits: 500 training, 100 test samples.
inline std::string sliceDir() {
  return sourcePath("tests/fixtures/mnist-slice");
}
/// The seed network (4 sigmoid layers: two convolutions, a full layer, softmax).
inline std::string seedNet() {
  return sourcePath("examples/mnist.net");
}

/// A fresh folder under ::testing::TempDir() named after the running test
/// (and a tag), removed at the end unless the test failed (kept to inspect).
class TempFolder {
public:
  explicit TempFolder(const std::string &tag = "") {
    const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "netc-e2e-";
    if (info)
      name += std::string(info->test_suite_name()) + "-" + info->name();
    name += tag.empty() ? "" : "-" + tag;
    for (char &c : name)
      if (c == '/')
        c = '_';
    path_ = std::filesystem::path(::testing::TempDir()) / (name + "-" + std::to_string(getpid()));
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    if (::testing::Test::HasFailure())
      return;
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

inline Bytes readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void writeBytes(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline void writeText(const std::string &path, const std::string &text) {
  writeBytes(path, Bytes(text.begin(), text.end()));
}

// ---- safetensors, read independently of netc ----

struct StoredTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  Bytes data;
  size_t fileOffset = 0; ///< where `data` starts in the file
};

struct Checkpoint {
  std::map<std::string, std::string> metadata;
  std::map<std::string, StoredTensor> tensors;
  std::string error; ///< set when the file could not be parsed
};

/// Parses a safetensors file: an 8-byte little-endian header length, a JSON
/// header (tensors by name with dtype, shape and data_offsets, plus
/// "__metadata__" of strings) and the data section.
inline Checkpoint readCheckpoint(const std::string &path) {
  Checkpoint c;
  Bytes bytes = readBytes(path);
  if (bytes.size() < 8) {
    c.error = path + ": shorter than 8 bytes";
    return c;
  }
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | bytes[static_cast<size_t>(i)];
  if (headerBytes > bytes.size() - 8) {
    c.error = path + ": header length past the end";
    return c;
  }
  nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(headerBytes),
                                                nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) {
    c.error = path + ": header is not a JSON object";
    return c;
  }
  const size_t dataStart = 8 + headerBytes;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      for (auto m = it->begin(); m != it->end(); ++m)
        c.metadata[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
      continue;
    }
    StoredTensor t;
    t.dtype = it->value("dtype", "");
    t.shape = it->value("shape", std::vector<int64_t>{});
    auto offsets = it->value("data_offsets", std::vector<uint64_t>{});
    if (offsets.size() != 2 || offsets[0] > offsets[1] || dataStart + offsets[1] > bytes.size()) {
      c.error = path + ": bad data_offsets of " + it.key();
      return c;
    }
    t.data.assign(bytes.begin() + long(dataStart + offsets[0]), bytes.begin() + long(dataStart + offsets[1]));
    t.fileOffset = dataStart + offsets[0];
    c.tensors[it.key()] = std::move(t);
  }
  return c;
}

/// F32 tensor values.
inline std::vector<float> floats(const StoredTensor &t) {
  std::vector<float> out(t.data.size() / sizeof(float));
  std::memcpy(out.data(), t.data.data(), out.size() * sizeof(float));
  return out;
}

/// Whether tensor `name` of `c` is a parameter rather than optimizer state:
/// state is named after its parameter ("<parameter>/<slot>", e.g.
/// "Hid3/biases/state0" or "Hid3/biases/momentum_buffer").
inline bool isParameter(const Checkpoint &c, const std::string &name) {
  for (size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1))
    if (c.tensors.count(name.substr(0, slash)))
      return false;
  return true;
}

/// Compares two checkpoints tensor by tensor, byte for byte; returns "" when
/// equal, else what differs first (name, element, values).
inline std::string compareTensors(const Checkpoint &a, const Checkpoint &b, bool parametersOnly = false) {
  if (!a.error.empty() || !b.error.empty())
    return a.error + b.error;
  auto keys = [&](const Checkpoint &c) {
    std::vector<std::string> names;
    for (const auto &[name, t] : c.tensors)
      if (!parametersOnly || isParameter(c, name))
        names.push_back(name);
    return names;
  };
  if (keys(a) != keys(b))
    return "the checkpoints hold different tensor names";
  for (const std::string &name : keys(a)) {
    const StoredTensor &x = a.tensors.at(name), &y = b.tensors.at(name);
    if (x.dtype != y.dtype || x.shape != y.shape)
      return "tensor " + name + ": dtype or shape differs";
    if (x.data == y.data)
      continue;
    std::vector<float> u = floats(x), v = floats(y);
    size_t differing = 0, first = u.size();
    for (size_t i = 0; i < u.size(); ++i)
      if (std::memcmp(&u[i], &v[i], sizeof(float)) != 0) {
        ++differing;
        first = std::min(first, i);
      }
    std::ostringstream out;
    out.precision(9);
    out << "tensor " << name << ": " << differing << " of " << u.size() << " values differ, first at "
        << first << " (" << u[first] << " vs " << v[first] << ")";
    return out.str();
  }
  return "";
}

// ---- IDX ----

struct Idx {
  std::vector<uint32_t> dims;
  Bytes values; ///< unsigned bytes
};

inline Idx readIdx(const std::string &path) {
  Idx idx;
  Bytes b = readBytes(path);
  if (b.size() < 4)
    return idx;
  const size_t rank = b[3];
  size_t pos = 4;
  for (size_t d = 0; d < rank && pos + 4 <= b.size(); ++d, pos += 4)
    idx.dims.push_back(uint32_t(b[pos]) << 24 | uint32_t(b[pos + 1]) << 16 | uint32_t(b[pos + 2]) << 8 |
                       uint32_t(b[pos + 3]));
  idx.values.assign(b.begin() + long(pos), b.end());
  return idx;
}

/// An unsigned-byte IDX file (magic 0x00000800 | rank).
inline Bytes idxFile(const std::vector<uint32_t> &dims, const Bytes &values) {
  Bytes out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<uint8_t>(d >> shift));
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

// ---- metrics ----

/// Every line of a JSON-lines file; a line that does not parse becomes a
/// discarded value (is_discarded()).
inline std::vector<nlohmann::json> readJsonLines(const std::string &path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    lines.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
  return lines;
}

// ---- settings ----

/// SGD with momentum on mini-batches: cheap, and used where learning itself
/// is not what is checked (reproducibility, resume).
inline TrainSettings quickSettings(const std::string &outDir, uint64_t seed = 7) {
  TrainSettings s;
  s.dataDir = sliceDir();
  s.outDir = outDir;
  s.epochs = 2;
  s.batch = 32;
  s.learningRate = 0.1f;
  s.momentum = 0.9f;
  s.initDiameter = 1.0f;
  s.seed = seed;
  s.threads = 1;
  // No estimate line in the metrics: these tests pin the others (the
  // estimate's are LearningTest's and tests/golden/cli/train-estimate.test's).
  s.costModel = "none";
  return s;
}

/// What a TrainResult says, for failure messages.
inline std::string describe(const TrainResult &r) {
  std::ostringstream out;
  out << "failure " << int(r.failure) << ", error: " << r.error;
  if (!r.diagnostics.empty())
    out << "\ndiagnostics:\n" << r.diagnostics;
  for (const EpochResult &e : r.epochs)
    out << "\nepoch " << e.epoch << ": train loss " << e.trainLoss << " acc " << e.trainAccuracy
        << ", test loss " << e.testLoss.value_or(-1) << " acc " << e.testAccuracy.value_or(-1);
  return out.str();
}

} // namespace netc::e2e
