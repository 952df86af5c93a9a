// SafetensorsRobustnessTest.cpp -- the reader never crashes and never accepts
// a cut-short file (truncation at every byte offset), survives seeded random
// mutations (it loads or refuses with a message, nothing else), and the atomic
// writer never leaves a half-written file or a temporary file behind: a
// missing or read-only directory, invalid contents or a failed rename leave the
// old checkpoint byte-for-byte intact.
#include "runtime/train/Safetensors.h"
#include "tests/checkpoint/SafetensorsTestSupport.h"

#include <gtest/gtest.h>

#include <random>

#include <sys/stat.h>
#include <unistd.h>

namespace netc::train {
namespace {

using namespace test;
using Bytes = std::vector<uint8_t>;

class SafetensorsTruncation : public ScratchDir {};

TEST_F(SafetensorsTruncation, EveryPrefixIsRefused) {
  Bytes full = *serializeSafetensors(sampleFile());
  ASSERT_TRUE(parseSafetensors(full, "full").ok());
  auto path = dir_ / "cut.safetensors";
  for (size_t length = 0; length < full.size(); ++length) {
    Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length));
    auto inMemory = parseSafetensors(prefix, "cut");
    EXPECT_FALSE(inMemory.ok()) << "a " << length << "-byte prefix was accepted";
    writeBytes(path, prefix);
    auto onDisk = readSafetensors(path.string());
    ASSERT_FALSE(onDisk.ok()) << "a " << length << "-byte prefix was accepted";
    EXPECT_EQ(onDisk.message().rfind(path.string() + ": ", 0), 0u) << onDisk.message();
  }
}

TEST(SafetensorsMutation, RandomMutationsLoadOrFailCleanly) {
  const Bytes valid = *serializeSafetensors(sampleFile());
  const size_t headerEnd = 8 + valid[0];
  std::mt19937 rng(20240607);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const std::string tokens[] = {
      "{", "}", "[", "]", ",", ":", "\"", "-", "0", "9", "e", "null", "\\u0000", " ", std::string(1, '\0')};
  int loaded = 0, refused = 0;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    Bytes bytes = valid;
    size_t mutations = 1 + pick(4);
    for (size_t m = 0; m < mutations && !bytes.empty(); ++m) {
      // Aim most mutations at the length field and the header, where the structure is.
      size_t at = pick(4) == 0 ? pick(bytes.size()) : pick(std::min(bytes.size(), headerEnd));
      switch (pick(6)) {
      case 0: bytes[at] = static_cast<uint8_t>(pick(256)); break;
      case 1: bytes[at] ^= static_cast<uint8_t>(1u << pick(8)); break;
      case 2: bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at)); break;
      case 3: {
        const std::string &token = tokens[pick(std::size(tokens))];
        bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), token.begin(), token.end());
        break;
      }
      case 4: bytes[at] = static_cast<uint8_t>("0123456789"[pick(10)]); break;
      default: bytes[pick(8) % bytes.size()] = static_cast<uint8_t>(pick(256)); break; // the length field
      }
    }
    auto result = parseSafetensors(bytes, "mutant");
    if (result.ok()) {
      ++loaded;
      // Whatever loads is internally consistent.
      for (const Tensor &t : result->tensors) {
        auto size = dtypeSize(t.dtype);
        ASSERT_TRUE(size.has_value()) << t.dtype;
        ASSERT_TRUE(t.elementCount().has_value());
        EXPECT_EQ(t.bytes.size(), uint64_t(*t.elementCount()) * *size);
      }
    } else {
      ++refused;
      EXPECT_EQ(result.message().rfind("mutant: ", 0), 0u) << result.message();
      EXPECT_GT(result.message().size(), std::string("mutant: ").size());
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(loaded, 0); // mutations of tensor data or metadata text still load
}

class SafetensorsAtomicWrite : public ScratchDir {
protected:
  /// Writes a valid "old" checkpoint at `path` and returns its bytes.
  Bytes writeOld(const std::filesystem::path &path) {
    EXPECT_TRUE(writeSafetensorsAtomic(path.string(), sampleFile()).ok());
    return readBytes(path);
  }
  static SafetensorsFile newContents() {
    SafetensorsFile file;
    file.setMetadataInt("epoch", 4);
    std::vector<float> values(100, 1.5f);
    file.tensors.push_back(*Tensor::fromF32("layer.W", {10, 10}, values));
    return file;
  }
};

TEST_F(SafetensorsAtomicWrite, ReplacesTheOldFileAndLeavesNoTemporary) {
  auto path = dir_ / "ckpt.safetensors";
  Bytes old = writeOld(path);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_TRUE(writeSafetensorsAtomic(path.string(), newContents()).ok());
  EXPECT_EQ(readBytes(path), *serializeSafetensors(newContents()));
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"ckpt.safetensors"});
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u); // a replaced file keeps its permissions

  // Writing the same contents twice gives identical files.
  ASSERT_TRUE(writeSafetensorsAtomic(path.string(), sampleFile()).ok());
  EXPECT_EQ(readBytes(path), old);
}

TEST_F(SafetensorsAtomicWrite, MissingDirectoryIsNamed) {
  auto path = dir_ / "no-such-dir" / "ckpt.safetensors";
  Status status = writeSafetensorsAtomic(path.string(), newContents());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("directory '" + (dir_ / "no-such-dir").string() + "' does not exist"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(listDir(dir_).empty());
}

TEST_F(SafetensorsAtomicWrite, ReadOnlyDirectoryKeepsTheOldFile) {
  auto sub = dir_ / "ro";
  std::filesystem::create_directory(sub);
  auto path = sub / "ckpt.safetensors";
  Bytes old = writeOld(path);
  ASSERT_EQ(::chmod(sub.c_str(), 0555), 0);
  // Root (and CAP_DAC_OVERRIDE) ignores directory permissions: probe first.
  auto probe = sub / "probe";
  if (FILE *f = std::fopen(probe.c_str(), "w")) {
    std::fclose(f);
    std::filesystem::remove(probe);
    GTEST_SKIP() << "this process may write into a 0555 directory (running as root?), so a read-only "
                    "directory cannot be simulated here";
  }
  Status status = writeSafetensorsAtomic(path.string(), newContents());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("directory '" + sub.string() + "' is not writable"), std::string::npos)
      << status.message();
  EXPECT_EQ(readBytes(path), old);
  EXPECT_EQ(listDir(sub), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(SafetensorsAtomicWrite, InvalidContentsKeepTheOldFile) {
  auto path = dir_ / "ckpt.safetensors";
  Bytes old = writeOld(path);
  SafetensorsFile bad = newContents();
  bad.tensors[0].bytes.resize(3);
  Status status = writeSafetensorsAtomic(path.string(), bad);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("which need 400 bytes, but holds 3"), std::string::npos)
      << status.message();
  EXPECT_EQ(readBytes(path), old);
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(SafetensorsAtomicWrite, FailedRenameRemovesTheTemporary) {
  // The target is a non-empty directory: the rename fails (even for root)
  // after the temporary file has been written.
  auto target = dir_ / "ckpt.safetensors";
  std::filesystem::create_directory(target);
  writeBytes(target / "keep", {1, 2, 3});
  Status status = writeSafetensorsAtomic(target.string(), newContents());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("renaming '" + target.string() + ".tmp-"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("unchanged"), std::string::npos) << status.message();
  EXPECT_EQ(listDir(dir_), std::vector<std::string>{"ckpt.safetensors"});
  EXPECT_EQ(readBytes(target / "keep"), (Bytes{1, 2, 3}));
}

TEST_F(SafetensorsAtomicWrite, PathWithoutFileNameIsRefused) {
  EXPECT_FALSE(writeSafetensorsAtomic("", newContents()).ok());
  Status status = writeSafetensorsAtomic(dir_.string() + "/", newContents());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("names no file"), std::string::npos) << status.message();
}

} // namespace
} // namespace netc::train
